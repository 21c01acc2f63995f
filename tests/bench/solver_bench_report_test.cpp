// bench/kernelopt/solver_bench_report: kernelopt_bench's results file.
#include "solver_bench_report.hpp"

#include <gtest/gtest.h>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(SolverBenchReport, EveryFieldParsesBack) {
  SolverBenchRun run;
  run.run = {"host " + test::kAwkwardText, "date " + test::kAwkwardText, "commit " + test::kAwkwardText};
  run.device = "sm_90 " + test::kAwkwardText;
  run.instances = 200;
  run.repeats = 50;
  run.seed = 0xFFFFFFFFFFFFFFFFull;
  run.rows.push_back({32, "flexible " + test::kAwkwardText, {0.5404, 0.58649, 82.4174}, {0.50049, 1, 2}, 90.04, 12.5});
  const Json parsed = Json::parse(jsonText(solverBenchJson(run)));
  EXPECT_EQ(parsed["benchmark"], "kernelopt kernel-level solver time");
  EXPECT_EQ(parsed["device"], run.device);
  EXPECT_EQ(parsed["host"], run.run.host);
  EXPECT_EQ(parsed["date"], run.run.date);
  EXPECT_EQ(parsed["commit"], run.run.commit);
  EXPECT_EQ(parsed["instances"], 200);
  EXPECT_EQ(parsed["repeats"], 50);
  EXPECT_EQ(parsed["seed"].get<std::uint64_t>(), 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(parsed["unit"], "microseconds");
  ASSERT_EQ(parsed["rows"].size(), 1u);
  const Json& row = parsed["rows"][0];
  EXPECT_EQ(row["n"], 32);
  EXPECT_EQ(row["family"], run.rows[0].family);
  EXPECT_EQ(row["solve_median"], 0.54);
  EXPECT_EQ(row["solve_p90"], 0.586);
  EXPECT_EQ(row["solve_max"], 82.417);
  EXPECT_EQ(row["algorithm1_median"], 0.5);
  EXPECT_EQ(row["feasible_percent"], 90.0);
  EXPECT_EQ(row["register_extension_percent"], 12.5);
}

} // namespace
} // namespace mqx::bench
