// The results file of mqx-launch-path-bench (bench/results/launch-path-sim-*.json):
// the run, and per number of regions referenced by a launch the median CPU
// time of the launching thread alone and as a member of mqxd's node.
#pragma once

#include <vector>

#include "../common/json_output.hpp"
#include "../common/run_info.hpp"

namespace mqx::bench {

struct LaunchPathRow {
  int regionsPerLaunch = 0;
  double aloneNanoseconds = 0;
  double withDaemonNanoseconds = 0;
};

struct LaunchPathRun {
  RunInfo run;
  int launchesPerRun = 0;
  int runs = 0;
  int residentRegions = 0;
  std::vector<LaunchPathRow> rows;
};

Json launchPathJson(const LaunchPathRun& run);

} // namespace mqx::bench
