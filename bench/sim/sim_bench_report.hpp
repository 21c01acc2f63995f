// The results file of mqx-sim-bench (bench/results/sim-policies-ablations.json):
// the run, the trace's shape and budget, and per variant its correctness,
// bytes moved, simulated transfer time and the manager's statistics.
#pragma once

#include <cstddef>
#include <vector>

#include "../common/json_output.hpp"
#include "../common/run_info.hpp"
#include "query_trace.hpp"

namespace mqx::bench {

struct SimBenchRun {
  RunInfo run;
  TraceShape shape;
  std::size_t deviceBudgetBytes = 0;
  double copyBandwidthGBps = 0;
  std::vector<TraceResult> results;
};

Json simBenchJson(const SimBenchRun& run);

} // namespace mqx::bench
