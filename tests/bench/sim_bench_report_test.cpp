// bench/sim/sim_bench_report: mqx-sim-bench's results file.
#include "sim_bench_report.hpp"

#include <gtest/gtest.h>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(SimBenchReport, EveryFieldParsesBack) {
  SimBenchRun run;
  run.run = {"host " + test::kAwkwardText, "date " + test::kAwkwardText, "commit " + test::kAwkwardText};
  run.shape.queries = 4;
  run.shape.repetitions = 2;
  run.shape.columnMiB = 40;
  run.deviceBudgetBytes = 273678336;
  run.copyBandwidthGBps = 25.0;
  TraceResult result;
  result.name = "variant " + test::kAwkwardText;
  result.correct = true;
  result.transfers.bytesToDevice = 647503872;
  result.transfers.bytesToHost = 8388608;
  result.transfers.secondsToDevice = 0.0262361234;
  result.transfers.secondsToHost = 0.0000001;
  result.wallSeconds = 6.57234;
  result.statistics.evictions = 12;
  result.statistics.bytesWrittenBack = 1ull << 40;
  run.results = {result, result};
  run.results[1].correct = false;

  const Json parsed = Json::parse(jsonText(simBenchJson(run)));
  EXPECT_EQ(parsed["benchmark"], "mqx-sim-bench");
  EXPECT_EQ(parsed["device"], "simulated (host memory)");
  EXPECT_EQ(parsed["host"], run.run.host);
  EXPECT_EQ(parsed["date"], run.run.date);
  EXPECT_EQ(parsed["commit"], run.run.commit);
  EXPECT_EQ(parsed["queries"], 4);
  EXPECT_EQ(parsed["repetitions"], 2);
  EXPECT_EQ(parsed["column_mib"], 40);
  EXPECT_EQ(parsed["device_budget_bytes"], 273678336);
  EXPECT_EQ(parsed["copy_bandwidth_gbps"], 25.0);
  ASSERT_EQ(parsed["results"].size(), 2u);
  const Json& first = parsed["results"][0];
  EXPECT_EQ(first["variant"], result.name);
  EXPECT_EQ(first["correct"], true);
  EXPECT_EQ(parsed["results"][1]["correct"], false);
  EXPECT_EQ(first["bytes_to_device"], 647503872);
  EXPECT_EQ(first["bytes_to_host"], 8388608);
  EXPECT_EQ(first["simulated_transfer_seconds"], 0.026236);
  EXPECT_EQ(first["wall_seconds"], 6.572);
  EXPECT_EQ(first["statistics"]["evictions"], 12);
  EXPECT_EQ(first["statistics"]["bytes_written_back"], 1ull << 40);
  EXPECT_TRUE(first["statistics"].contains("eviction_ns"));
  EXPECT_TRUE(first["statistics"].contains("fence_waits_to_remap"));
  EXPECT_TRUE(first["statistics"].contains("fence_wait_ns"));
  EXPECT_TRUE(first["statistics"].contains("swap_bytes_borrowed"));
  EXPECT_TRUE(first["statistics"].contains("staged_write_backs"));
  EXPECT_EQ(first["statistics"].size(), 28u); // every counter and gauge of Statistics::toJson
}

} // namespace
} // namespace mqx::bench
