#include "sim_bench_report.hpp"

namespace mqx::bench {
namespace {

Json resultJson(const TraceResult& result) {
  const auto& transfers = result.transfers;
  return {{"variant", result.name},
          {"correct", result.correct},
          {"bytes_to_device", transfers.bytesToDevice},
          {"bytes_to_host", transfers.bytesToHost},
          {"simulated_transfer_seconds", rounded(transfers.secondsToDevice + transfers.secondsToHost, 6)},
          {"wall_seconds", rounded(result.wallSeconds, 3)},
          {"statistics", Json::parse(result.statistics.toJson())}};
}

} // namespace

Json simBenchJson(const SimBenchRun& run) {
  Json results = Json::array();
  for (const TraceResult& result : run.results)
    results.push_back(resultJson(result));
  return {{"benchmark", "mqx-sim-bench"},
          {"device", "simulated (host memory)"},
          {"host", run.run.host},
          {"date", run.run.date},
          {"commit", run.run.commit},
          {"queries", run.shape.queries},
          {"repetitions", run.shape.repetitions},
          {"column_mib", run.shape.columnMiB},
          {"device_budget_bytes", run.deviceBudgetBytes},
          {"copy_bandwidth_gbps", run.copyBandwidthGBps},
          {"results", std::move(results)}};
}

} // namespace mqx::bench
