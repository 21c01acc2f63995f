#include "solver_bench_report.hpp"

namespace mqx::bench {

Json solverBenchJson(const SolverBenchRun& run) {
  Json rows = Json::array();
  for (const SolverBenchRow& row : run.rows)
    rows.push_back({{"n", row.n},
                    {"family", row.family},
                    {"solve_median", rounded(row.full.median, 3)},
                    {"solve_p90", rounded(row.full.p90, 3)},
                    {"solve_max", rounded(row.full.max, 3)},
                    {"algorithm1_median", rounded(row.algorithmOne.median, 3)},
                    {"feasible_percent", rounded(row.feasiblePercent, 1)},
                    {"register_extension_percent", rounded(row.registerExtensionPercent, 1)}});
  return {{"benchmark", "kernelopt kernel-level solver time"},
          {"device", run.device},
          {"host", run.run.host},
          {"date", run.run.date},
          {"commit", run.run.commit},
          {"instances", run.instances},
          {"repeats", run.repeats},
          {"seed", run.seed},
          {"unit", "microseconds"},
          {"rows", std::move(rows)}};
}

} // namespace mqx::bench
