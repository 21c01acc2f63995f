// bench/common/json_output: the text of a results file and its writing.
#include "json_output.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(JsonOutput, TextIsIndentedEndsWithANewlineAndParsesBack) {
  const Json document = {{"name", test::kAwkwardText}, {"count", 3}, {"list", Json::array({1.5, "x"})}};
  const std::string text = jsonText(document);
  EXPECT_EQ(text.rfind("{\n  \"name\": ", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(Json::parse(text), document);
}

TEST(JsonOutput, NonFiniteNumbersAreNullAndBytesThatAreNotUtf8Replaced) {
  const Json document = {{"nan", std::numeric_limits<double>::quiet_NaN()},
                         {"infinity", std::numeric_limits<double>::infinity()},
                         {"latin-1", "caf\xE9"}};
  const Json parsed = Json::parse(jsonText(document));
  EXPECT_TRUE(parsed["nan"].is_null());
  EXPECT_TRUE(parsed["infinity"].is_null());
  EXPECT_EQ(parsed["latin-1"], "caf\xEF\xBF\xBD");
}

TEST(JsonOutput, WritesTheFileOrSaysItCannot) {
  const std::string path = "/tmp/mqx-json-output-test-" + std::to_string(getpid()) + ".json";
  const Json document = {{"name", test::kAwkwardText}};
  ASSERT_TRUE(writeJsonFile(path, document));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  EXPECT_EQ(text.str(), jsonText(document));

  testing::internal::CaptureStderr();
  EXPECT_FALSE(writeJsonFile("/nonexistent-mqx-folder/results.json", document));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("/nonexistent-mqx-folder/results.json"), std::string::npos);
}

TEST(JsonOutput, RoundedKeepsTheDecimalsAsked) {
  EXPECT_EQ(Json(rounded(0.123456789, 3)).dump(), "0.123");
  EXPECT_EQ(Json(rounded(19.4904999, 3)).dump(), "19.49");
  EXPECT_EQ(Json(rounded(2.0, 5)).dump(), "2.0");
  EXPECT_TRUE(std::isnan(rounded(std::numeric_limits<double>::quiet_NaN(), 2)));
}

} // namespace
} // namespace mqx::bench
