// The trace's JSON (libmqx/trace/trace_json.cpp, TraceRecorder's file): every
// event parses back with what was recorded, whatever bytes its names and
// labels hold, and a finished file is one valid document.
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "trace/trace_json.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx::trace {
namespace {

using Json = nlohmann::json;

// Quotes, backslashes, control characters and non-ASCII (2, 3 and 4 bytes in
// UTF-8); short enough for a label (TraceEvent::kLabelBytes).
const std::string kAwkwardText = "q\" b\\ n\n t\t \x07\x1f \xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E";

TEST(TraceJson, EventParsesBackWithEveryField) {
  ASSERT_LT(kAwkwardText.size(), TraceEvent::kLabelBytes);
  TraceEvent event;
  event.phase = Phase::Complete;
  event.name = "load \"x\"";
  event.category = "transfer";
  event.timestampNs = 123456789;
  event.durationNs = 1001;
  event.track = 7;
  event.argument("bytes", std::numeric_limits<std::uint64_t>::max()).argument("pages", 3).withLabel(kAwkwardText);
  std::string text;
  appendEventJson(text, event, 42);
  EXPECT_EQ(text.find('\n'), std::string::npos) << text; // one line per event
  const Json parsed = Json::parse(text);
  EXPECT_EQ(parsed["name"], "load \"x\"");
  EXPECT_EQ(parsed["cat"], "transfer");
  EXPECT_EQ(parsed["ph"], "X");
  EXPECT_EQ(parsed["pid"], 42);
  EXPECT_EQ(parsed["tid"], 7);
  EXPECT_DOUBLE_EQ(parsed["ts"].get<double>(), 123456.789);
  EXPECT_DOUBLE_EQ(parsed["dur"].get<double>(), 1.001);
  EXPECT_FALSE(parsed.contains("s"));
  EXPECT_EQ(parsed["args"]["bytes"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parsed["args"]["pages"], 3);
  EXPECT_EQ(parsed["args"]["label"], kAwkwardText);
}

TEST(TraceJson, InstantHasTrackScopeAndNoDuration) {
  TraceEvent event;
  event.phase = Phase::Instant;
  event.name = "admitted";
  event.category = "admission";
  event.timestampNs = 5;
  std::string text;
  appendEventJson(text, event, 1);
  const Json parsed = Json::parse(text);
  EXPECT_EQ(parsed["ph"], "i");
  EXPECT_EQ(parsed["s"], "t");
  EXPECT_FALSE(parsed.contains("dur"));
  EXPECT_DOUBLE_EQ(parsed["ts"].get<double>(), 0.005);
  EXPECT_TRUE(parsed["args"].is_object());
  EXPECT_TRUE(parsed["args"].empty());
}

TEST(TraceJson, ProcessAndTrackNamesParseBack) {
  const std::string name = "mqx client " + kAwkwardText + " and more than a label holds";
  std::string text;
  appendProcessNameJson(text, 42, name);
  Json parsed = Json::parse(text);
  EXPECT_EQ(parsed["name"], "process_name");
  EXPECT_EQ(parsed["ph"], "M");
  EXPECT_EQ(parsed["pid"], 42);
  EXPECT_EQ(parsed["args"]["name"], name);
  text.clear();
  appendTrackNameJson(text, 42, 9, name);
  parsed = Json::parse(text);
  EXPECT_EQ(parsed["name"], "thread_name");
  EXPECT_EQ(parsed["tid"], 9);
  EXPECT_EQ(parsed["args"]["name"], name);
}

TEST(TraceJson, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // A label cut in the middle of a character, and a Latin-1 name.
  TraceEvent event;
  event.withLabel(std::string(TraceEvent::kLabelBytes, 'a').replace(TraceEvent::kLabelBytes - 2, 2, "\xC3\xA9"));
  std::string text;
  appendEventJson(text, event, 1);
  const Json parsed = Json::parse(text);
  EXPECT_EQ(parsed["args"]["label"], std::string(TraceEvent::kLabelBytes - 2, 'a') + "\xEF\xBF\xBD");
  text.clear();
  appendProcessNameJson(text, 1, "caf\xE9");
  EXPECT_EQ(Json::parse(text)["args"]["name"], "caf\xEF\xBF\xBD");
}

TEST(TraceJson, FinishedRecorderFileIsOneDocument) {
  const std::string path = "/tmp/mqx-trace-json-test-" + std::to_string(getpid()) + ".json";
  {
    auto recorder = TraceRecorder::open(path, "test " + kAwkwardText, 2);
    ASSERT_NE(recorder, nullptr);
    recorder->nameTrack(5, kAwkwardText);
    for (std::uint64_t i = 0; i < 5; ++i) {
      TraceEvent event;
      event.name = "launch";
      event.category = "launch";
      event.timestampNs = i;
      recorder->record(event.withLabel(kAwkwardText));
    }
    recorder->finish();
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  const Json document = Json::parse(text.str());
  EXPECT_EQ(document["displayTimeUnit"], "ms");
  const Json& events = document["traceEvents"];
  ASSERT_EQ(events.size(), 1u + 2u + 1u + 5u); // process, the two transfer streams, the named track, the events
  EXPECT_EQ(events[0]["args"]["name"], "test " + kAwkwardText);
  EXPECT_EQ(events[3]["args"]["name"], kAwkwardText);
  EXPECT_EQ(events[8]["args"]["label"], kAwkwardText);
  EXPECT_DOUBLE_EQ(events[8]["ts"].get<double>(), 0.004);
}

} // namespace
} // namespace mqx::trace
