// bench/daemon/launch_path_report: mqx-launch-path-bench's results file.
#include "launch_path_report.hpp"

#include <gtest/gtest.h>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(LaunchPathReport, EveryFieldParsesBack) {
  LaunchPathRun run{{"host " + test::kAwkwardText, "date " + test::kAwkwardText, "commit " + test::kAwkwardText},
                    20000,
                    5,
                    64,
                    {{1, 301.449, 388.051}, {16, 1203.0, 1450.26}}};
  const Json parsed = Json::parse(jsonText(launchPathJson(run)));
  EXPECT_EQ(parsed["benchmark"], "mqx-launch-path-bench");
  EXPECT_EQ(parsed["device"], "simulated (host memory)");
  EXPECT_EQ(parsed["host"], run.run.host);
  EXPECT_EQ(parsed["date"], run.run.date);
  EXPECT_EQ(parsed["commit"], run.run.commit);
  EXPECT_EQ(parsed["launches_per_run"], 20000);
  EXPECT_EQ(parsed["runs"], 5);
  EXPECT_EQ(parsed["statistic"], "median CPU ns of the launching thread per launch");
  EXPECT_EQ(parsed["resident_regions"], 64);
  ASSERT_EQ(parsed["results"].size(), 2u);
  EXPECT_EQ(parsed["results"][0]["regions_per_launch"], 1);
  EXPECT_EQ(parsed["results"][0]["alone_ns"], 301.4);
  EXPECT_EQ(parsed["results"][0]["with_mqxd_ns"], 388.1);
  EXPECT_EQ(parsed["results"][1]["regions_per_launch"], 16);
  EXPECT_EQ(parsed["results"][1]["with_mqxd_ns"], 1450.3);
}

} // namespace
} // namespace mqx::bench
