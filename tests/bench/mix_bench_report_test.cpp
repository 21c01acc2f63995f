// bench/kernelopt/mix_bench_report: kernelopt_mix_bench's results file.
#include "mix_bench_report.hpp"

#include <gtest/gtest.h>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(MixBenchReport, EveryFieldParsesBack) {
  MixBenchRun run;
  run.device = "NVIDIA H100 " + test::kAwkwardText;
  run.commit = "commit " + test::kAwkwardText;
  run.repeats = 30;
  run.resultsEqual = true;
  MixResult mix{"mix " + test::kAwkwardText, "optimizer " + test::kAwkwardText, {}, 2.0, 1.0, 0.5};
  mix.kernels.push_back({"Q1 " + test::kAwkwardText, "build", 2556, {10, 256}, {132, 64}});
  mix.kernels.push_back({"Q2", "probe " + test::kAwkwardText, 6000000, {23438, 256}, {264, 1024}});
  run.mixes.push_back(mix);
  const Json parsed = Json::parse(jsonText(mixBenchJson(run)));
  EXPECT_EQ(parsed["device"], run.device);
  EXPECT_EQ(parsed["commit"], run.commit);
  EXPECT_EQ(parsed["repeats"], 30);
  EXPECT_EQ(parsed["results_equal"], true);
  ASSERT_EQ(parsed["mixes"].size(), 1u);
  const Json& result = parsed["mixes"][0];
  EXPECT_EQ(result["name"], mix.name);
  EXPECT_EQ(result["optimizer"], mix.optimizer);
  EXPECT_EQ(result["sequential_ms"], 2.0);
  EXPECT_EQ(result["streams_default_ms"], 1.0);
  EXPECT_EQ(result["streams_optimised_ms"], 0.5);
  EXPECT_EQ(result["speedup_vs_sequential"], 4.0);
  EXPECT_EQ(result["speedup_vs_streams"], 2.0);
  ASSERT_EQ(result["kernels"].size(), 2u);
  EXPECT_EQ(result["kernels"][0]["query"], mix.kernels[0].query);
  EXPECT_EQ(result["kernels"][0]["phase"], "build");
  EXPECT_EQ(result["kernels"][0]["elements"], 2556);
  EXPECT_EQ(result["kernels"][0]["default"], Json::array({10, 256}));
  EXPECT_EQ(result["kernels"][0]["optimised"], Json::array({132, 64}));
  EXPECT_EQ(result["kernels"][1]["phase"], mix.kernels[1].phase);
  EXPECT_EQ(result["kernels"][1]["elements"], 6000000);
}

} // namespace
} // namespace mqx::bench
