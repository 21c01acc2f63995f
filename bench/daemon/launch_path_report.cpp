#include "launch_path_report.hpp"

namespace mqx::bench {

Json launchPathJson(const LaunchPathRun& run) {
  Json rows = Json::array();
  for (const LaunchPathRow& row : run.rows)
    rows.push_back({{"regions_per_launch", row.regionsPerLaunch},
                    {"alone_ns", rounded(row.aloneNanoseconds, 1)},
                    {"with_mqxd_ns", rounded(row.withDaemonNanoseconds, 1)}});
  return {{"benchmark", "mqx-launch-path-bench"},
          {"device", "simulated (host memory)"},
          {"host", run.run.host},
          {"date", run.run.date},
          {"commit", run.run.commit},
          {"launches_per_run", run.launchesPerRun},
          {"runs", run.runs},
          {"statistic", "median CPU ns of the launching thread per launch"},
          {"resident_regions", run.residentRegions},
          {"results", std::move(rows)}};
}

} // namespace mqx::bench
