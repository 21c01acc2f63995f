// One SSB query: ssb-qX.Y --data DIR [--check] [--fused] [--repeat N]
//                          [--device auto|gpu|sim].
// Each of the 13 executables is this file compiled with its query's name
// (MQX_SSB_QUERY), so that every query is a separate program, as mqx sees
// them in the paper's experiments. It runs on the GPU (built with CUDA and
// one present) or on the simulated device (libmqx's memory manager on the
// sim backend, joined to mqxd's node when one runs); --device, else the
// configuration's backend.kind (MQX_BACKEND_KIND), chooses, auto preferring
// the GPU. The columns are loaded into host memory before the timed part;
// --check compares the result with the CPU reference exactly and exits 1
// when they differ. --fused runs the fused variant. Errors exit 2.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/ssb_data.hpp"
#include "ssb/gpu/executor.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/gpu/result_decoder.hpp"
#include "ssb/gpu/sim_query_device.hpp"
#include "ssb/reference/reference_queries.hpp"
#ifdef MQX_SSB_WITH_CUDA
#include "ssb/gpu/cuda_device.hpp"
#endif

#include "config/config.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
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
  std::string device; // auto, gpu, sim; empty: backend.kind
};

const char *const kUsage =
    "usage: ssb-" MQX_SSB_QUERY " --data DIR [--check] [--fused] [--repeat N] "
    "[--device auto|gpu|sim]\n"
    "  runs SSB query " MQX_SSB_QUERY " on the data generated into DIR (ssb-datagen);\n"
    "  --check compares the result with the CPU reference, --fused runs the fused variant,\n"
    "  --device chooses the device (default: backend.kind). Configured by MQX_CONFIG and "
    "MQX_*.\n";

// A bad command line: one line naming what is wrong, exit status 2.
[[noreturn]] void commandLineError(const std::string &why) {
  std::fprintf(stderr, "ssb-%s: %s (try --help)\n", MQX_SSB_QUERY, why.c_str());
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        commandLineError(std::string(argument) + " needs a value");
      return argv[++i];
    };
    if (argument == "--help" || argument == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (argument == "--data") {
      options.dataDir = value();
    } else if (argument == "--check") {
      options.check = true;
    } else if (argument == "--fused") {
      options.fused = true;
    } else if (argument == "--repeat") {
      const std::string text = value();
      const auto [end, error] =
          std::from_chars(text.data(), text.data() + text.size(), options.repeat);
      if (error != std::errc{} || end != text.data() + text.size() || options.repeat < 1)
        commandLineError("--repeat: expected a positive count, got '" + text + "'");
    } else if (argument == "--device") {
      options.device = value();
      if (options.device != "auto" && options.device != "gpu" && options.device != "sim")
        commandLineError("--device: expected auto, gpu or sim, got '" + options.device + "'");
    } else {
      commandLineError("unknown argument '" + std::string(argument) + "'");
    }
  }
  if (options.dataDir.empty())
    commandLineError("--data DIR is required");
  return options;
}

// The device named by --device, else by backend.kind: "gpu" or "sim".
std::string chooseDevice(const Options &options, const mqx::Config &config) {
  std::string wanted = options.device;
  if (wanted.empty())
    wanted = config.backend == mqx::BackendKind::Sim    ? "sim"
             : config.backend == mqx::BackendKind::Cuda ? "gpu"
                                                        : "auto";
#ifdef MQX_SSB_WITH_CUDA
  if (wanted == "auto")
    return mqx::ssb::gpu::cudaDevicePresent() ? "gpu" : "sim";
  return wanted;
#else
  if (wanted == "gpu")
    throw std::runtime_error("built without CUDA: only --device sim (or auto) runs here");
  return "sim";
#endif
}

std::unique_ptr<mqx::ssb::gpu::QueryDevice> openDevice(const std::string &kind,
                                                       const mqx::Config &config) {
#ifdef MQX_SSB_WITH_CUDA
  if (kind == "gpu")
    return mqx::ssb::gpu::openCudaDevice();
#endif
  return std::make_unique<mqx::ssb::gpu::SimQueryDevice>(config, "ssb-" MQX_SSB_QUERY);
}

// What libmqx's manager did on the simulated device, one "# mqx" line each.
void printSimReport(const mqx::ssb::gpu::SimDeviceReport &report) {
  const mqx::Statistics &stats = report.statistics;
  std::printf("# mqx node %s\n", report.onNode ? "joined" : "alone");
  std::printf("# mqx evictions %llu\n", static_cast<unsigned long long>(stats.evictions));
  std::printf("# mqx bytes to device %llu\n", static_cast<unsigned long long>(stats.bytesToDevice));
  std::printf("# mqx bytes lazy avoided %llu\n",
              static_cast<unsigned long long>(stats.bytesAvoidedLazy));
  std::printf("# mqx bytes written back %llu\n",
              static_cast<unsigned long long>(stats.bytesWrittenBack));
  std::printf("# mqx sim transfer seconds %.6f\n",
              report.transfers.secondsToDevice + report.transfers.secondsToHost);
  std::printf("# mqx statistics %s\n", stats.toJson().c_str());
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

  // Opened after the columns are in host memory, closed before them: the
  // simulated device's lazy copies read the cache's columns until it goes.
  mqx::Config config = mqx::loadConfig();
  mqx::setLogLevel(config.logLevel);
  std::string kind = chooseDevice(options, config);
  std::unique_ptr<gpu::QueryDevice> device = openDevice(kind, config);

  gpu::QueryRun run;
  for (int i = 0; i < options.repeat; ++i) {
    run = gpu::runPlan(plan, cache, *device,
                       options.fused ? gpu::Variant::Fused : gpu::Variant::OperatorAtATime);
    std::printf("# run %d total %.3f ms\n", i + 1, run.totalMilliseconds);
  }
  QueryResult result = gpu::decodeResult(plan, run.aggregate, cache);
  std::fputs(formatResult(result).c_str(), stdout);
  for (const gpu::OperatorTiming &step : run.operators)
    std::printf("# operator %-24s %10.3f ms %10.1f MB\n", step.name.c_str(), step.milliseconds,
                static_cast<double>(step.deviceBytes) / 1e6);
  std::printf("# device %s\n", device->name().c_str());
  std::printf("# variant %s\n", options.fused ? "fused" : "operator-at-a-time");
  std::printf("# uploaded %.1f MB\n", static_cast<double>(run.uploadedBytes) / 1e6);
  std::printf("# device peak %.1f MB\n", static_cast<double>(run.peakDeviceBytes) / 1e6);
  std::printf("# total %.3f ms\n", run.totalMilliseconds);
  if (auto *sim = dynamic_cast<gpu::SimQueryDevice *>(device.get()))
    printSimReport(sim->report());

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
