// bench/gpu/bench_results: a run's results saved by a child process and
// loaded by the parent, and mqx-gpu-bench's results file.
#include "bench_results.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

std::string scratchPath(const std::string& name) {
  return "/tmp/mqx-bench-results-test-" + std::to_string(getpid()) + "-" + name;
}

TEST(BenchResults, SaveAndLoadKeepTextsNumbersAndNaN) {
  Results saved;
  saved.note("device", "GPU " + test::kAwkwardText);
  saved.set("launch_us", 2.3456789012345);
  saved.set("evict_bytes_written_back", 1073741824.0);
  saved.set("lazy_load_vs_native_pageable", std::numeric_limits<double>::quiet_NaN());
  const std::string path = scratchPath("saved.json");
  ASSERT_TRUE(saved.save(path));
  Results loaded;
  ASSERT_TRUE(loaded.load(path));
  std::remove(path.c_str());
  EXPECT_EQ(loaded.text("device"), "GPU " + test::kAwkwardText);
  EXPECT_EQ(loaded.get("launch_us"), 2.3456789012345); // exactly: no digits lost on the way
  EXPECT_EQ(loaded.get("evict_bytes_written_back"), 1073741824.0);
  EXPECT_TRUE(loaded.has("lazy_load_vs_native_pageable"));
  EXPECT_TRUE(std::isnan(loaded.get("lazy_load_vs_native_pageable")));
  EXPECT_EQ(jsonText(loaded.toJson()), jsonText(saved.toJson())); // as text: NaN != NaN
}

TEST(BenchResults, LoadRefusesWhatIsNotAResultsObjectNamingTheFile) {
  const std::string path = scratchPath("bad.json");
  for (const std::string& text : {std::string("launch_us 2.5\n"), std::string("{\"launch_us\": 2.5"),
                                  std::string("[1, 2]"), std::string("{\"launch_us\": [2.5]}"), std::string()}) {
    std::ofstream(path) << text;
    Results results;
    testing::internal::CaptureStderr();
    EXPECT_FALSE(results.load(path)) << text;
    const std::string error = testing::internal::GetCapturedStderr();
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  }
  std::remove(path.c_str());
  Results results;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(results.load(path));
  EXPECT_NE(testing::internal::GetCapturedStderr().find(path), std::string::npos);
}

TEST(BenchResults, GpuBenchDocumentHoldsEveryRun) {
  GpuBenchRun run;
  run.date = "date " + test::kAwkwardText;
  run.commit = "commit " + test::kAwkwardText;
  run.transferBytes = std::size_t{1} << 30;
  run.repetitions = 3;
  run.memoryLimit = "1028MiB";
  run.native.note("device", "NVIDIA H100 " + test::kAwkwardText);
  run.native.set("launch_us", 2.25);
  Results mqx;
  mqx.set("launch_us", 2.75);
  mqx.set("not_measured", std::numeric_limits<double>::infinity());
  run.mqx = mqx;
  run.derived.note("pageable_strategy_faster", "staging ring (kept)");
  run.derived.set("launch_added_us", 0.5);

  const Json parsed = Json::parse(jsonText(gpuBenchJson(run)));
  EXPECT_EQ(parsed["benchmark"], "mqx-gpu-bench");
  EXPECT_EQ(parsed["device"], "NVIDIA H100 " + test::kAwkwardText);
  EXPECT_EQ(parsed["date"], run.date);
  EXPECT_EQ(parsed["commit"], run.commit);
  EXPECT_EQ(parsed["transfer_bytes"], 1073741824);
  EXPECT_EQ(parsed["repetitions"], 3);
  EXPECT_EQ(parsed["mqx_device_memory_limit"], "1028MiB");
  EXPECT_EQ(parsed["native"]["device"], "NVIDIA H100 " + test::kAwkwardText);
  EXPECT_EQ(parsed["native"]["launch_us"], 2.25);
  EXPECT_EQ(parsed["mqx"]["launch_us"], 2.75);
  EXPECT_TRUE(parsed["mqx"]["not_measured"].is_null());
  EXPECT_TRUE(parsed["mqx_page_64MiB"].is_null()); // that run failed
  EXPECT_EQ(parsed["derived"]["pageable_strategy_faster"], "staging ring (kept)");
  EXPECT_EQ(parsed["derived"]["launch_added_us"], 0.5);
}

} // namespace
} // namespace mqx::bench
