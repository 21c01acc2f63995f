// One SSB query on the GPU: ssb-qX.Y --data DIR [--check] [--fused] [--repeat N].
// Each of the 13 executables is this file compiled with its query's name
// (MQX_SSB_QUERY), so that every query is a separate program, as mqx sees
// them in the paper's experiments. The columns are loaded into host memory
// before the timed part; --check compares the result with the CPU reference
// exactly and exits 1 when they differ. --fused runs the fused variant.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/ssb_data.hpp"
#include "ssb/gpu/gpu_executor.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/gpu/result_decoder.hpp"
#include "ssb/reference/reference_queries.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#ifndef MQX_SSB_QUERY
#error "compile with -DMQX_SSB_QUERY=\"q1.1\" (one executable per query)"
#endif

namespace {

struct Options {
  std::string dataDir;
  bool check = false;
  bool fused = false;
  int repeat = 1;
};

[[noreturn]] void usage(const char *program) {
  std::fprintf(stderr, "usage: %s --data DIR [--check] [--fused] [--repeat N]\n", program);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--data" && i + 1 < argc)
      options.dataDir = argv[++i];
    else if (arg == "--check")
      options.check = true;
    else if (arg == "--fused")
      options.fused = true;
    else if (arg == "--repeat" && i + 1 < argc)
      options.repeat = std::atoi(argv[++i]);
    else
      usage(argv[0]);
  }
  if (options.dataDir.empty() || options.repeat < 1)
    usage(argv[0]);
  return options;
}

int runQuery(const Options &options) {
  using namespace mqx::ssb;
  auto query = parseQueryName(MQX_SSB_QUERY);
  if (!query) {
    std::fprintf(stderr, "unknown query %s\n", MQX_SSB_QUERY);
    return 2;
  }
  SsbData data = SsbData::open(options.dataDir);
  ColumnCache cache(data);
  // Everything the GPU reads goes to host memory before the timing starts.
  gpu::QueryPlan plan = gpu::planQuery(*query, cache);
  for (const std::string &column : gpu::factColumns(plan))
    cache.column(TableId::Lineorder, column);

  std::string device = gpu::initializeDevice();

  gpu::GpuRun run;
  for (int i = 0; i < options.repeat; ++i) {
    run = gpu::runPlanOnGpu(plan, cache,
                            options.fused ? gpu::Variant::Fused : gpu::Variant::OperatorAtATime);
    std::printf("# run %d total %.3f ms\n", i + 1, run.totalMilliseconds);
  }
  QueryResult result = gpu::decodeResult(plan, run.aggregate, cache);
  std::fputs(formatResult(result).c_str(), stdout);
  for (const gpu::OperatorTiming &step : run.operators)
    std::printf("# operator %-24s %10.3f ms\n", step.name.c_str(), step.milliseconds);
  std::printf("# device %s\n", device.c_str());
  std::printf("# variant %s\n", options.fused ? "fused" : "operator-at-a-time");
  std::printf("# uploaded %.1f MB\n", static_cast<double>(run.uploadedBytes) / 1e6);
  std::printf("# device peak %.1f MB\n", static_cast<double>(run.peakDeviceBytes) / 1e6);
  std::printf("# total %.3f ms\n", run.totalMilliseconds);

  if (options.check) {
    QueryResult expected = runReferenceQuery(*query, cache);
    std::string difference = describeDifference(expected, result);
    if (!difference.empty()) {
      std::printf("# check FAILED: %s\n", difference.c_str());
      return 1;
    }
    std::printf("# check passed (%zu rows)\n", result.rows.size());
  }
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  try {
    return runQuery(options);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "ssb-%s: %s\n", MQX_SSB_QUERY, error.what());
    return 2;
  }
}
