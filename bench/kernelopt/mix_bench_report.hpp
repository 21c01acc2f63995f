// The results file of kernelopt_mix_bench (bench/results/kernelopt-mix-*.json):
// per kernel mix its kernels with their default and optimised launch
// geometry, and the median time of the three ways of running them.
#pragma once

#include <string>
#include <vector>

#include "../common/json_output.hpp"

namespace mqx::bench {

struct MixLaunch {
  unsigned grid = 0;
  unsigned block = 0;
};

struct MixKernel {
  std::string query;
  std::string phase; // build, scan or probe
  long long elements = 0;
  MixLaunch defaults;
  MixLaunch optimised;
};

struct MixResult {
  std::string name;
  std::string optimizer; // what kernelopt used for the mix
  std::vector<MixKernel> kernels;
  // Medians in milliseconds.
  double sequential = 0;       // one after another, default geometry
  double streamsDefault = 0;   // a stream each, default geometry
  double streamsOptimised = 0; // a stream each, kernelopt's geometry
};

struct MixBenchRun {
  std::string device;
  std::string commit;
  int repeats = 0;
  std::vector<MixResult> mixes;
  bool resultsEqual = false; // every mode's results equal the sequential run's
};

Json mixBenchJson(const MixBenchRun& run);

} // namespace mqx::bench
