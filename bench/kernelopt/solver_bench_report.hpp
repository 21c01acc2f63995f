// The results file of kernelopt_bench (bench/results/kernelopt-solver-sim.json):
// per number of kernels and instance family, the solver's time per call in
// microseconds over the instances, and how many instances were feasible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/json_output.hpp"
#include "../common/run_info.hpp"

namespace mqx::bench {

struct SolverTimes {
  double median = 0, p90 = 0, max = 0;
};

struct SolverBenchRow {
  int n = 0;
  std::string family;
  SolverTimes full;         // Algorithm 1 and the register extension where needed
  SolverTimes algorithmOne; // Algorithm 1 alone
  double feasiblePercent = 0;
  double registerExtensionPercent = 0;
};

struct SolverBenchRun {
  RunInfo run;
  std::string device;
  int instances = 0;
  int repeats = 0;
  std::uint64_t seed = 0;
  std::vector<SolverBenchRow> rows;
};

Json solverBenchJson(const SolverBenchRun& run);

} // namespace mqx::bench
