// One SSB query: ssb-qX.Y --data DIR | --shared NAME [--check] [--fused |
//                          --join-first] [--repeat N] [--device auto|gpu|sim].
// Each of the 13 executables is this file compiled with its query's name
// (MQX_SSB_QUERY), so that every query is a separate program, as mqx sees
// them in the paper's experiments. It runs on the GPU (built with CUDA and
// one present) or on the simulated device (libmqx's memory manager on the
// sim backend, joined to mqxd's node when one runs); --device, else the
// configuration's backend.kind (MQX_BACKEND_KIND), chooses, auto preferring
// the GPU. The columns are loaded into host memory before the timed part,
// from DIR's files or, with --shared, by mapping the shared-memory store an
// ssb-loader keeps (no file is read then); --check compares the result with
// the CPU reference exactly (with --shared, with the reference's result the
// loader computed) and exits 1 when they differ. --fused and --join-first
// run other variants (executor.hpp). --repeat N runs the query's GPU work N
// times in the process; every repeat's aggregate must equal the first's.
// The last line, "# timing {json}", says how much of the process's time the
// GPU work took (docs/ssb.md, "The paper's regime"). Errors exit 2.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/command_line.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/shared_column_store.hpp"
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

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <time.h>
#include <unistd.h>

#ifndef MQX_SSB_QUERY
#error "compile with -DMQX_SSB_QUERY=\"q1.1\" (one executable per query)"
#endif

namespace {

struct Options {
  std::string dataDir;
  std::string shared; // the shared column store's name
  int sharedWaitMilliseconds = 30000;
  bool check = false;
  mqx::ssb::gpu::Variant variant = mqx::ssb::gpu::Variant::OperatorAtATime;
  int repeat = 1;
  std::string device; // auto, gpu, sim; empty: backend.kind
};

const char* const kUsage =
    "usage: ssb-" MQX_SSB_QUERY " --data DIR | --shared NAME [--shared-wait-ms MS] [--check]\n"
    "       [--fused | --join-first] [--repeat N] [--device auto|gpu|sim]\n"
    "  runs SSB query " MQX_SSB_QUERY " on the data generated into DIR (ssb-datagen), or on the\n"
    "  columns that ssb-loader keeps in shared memory as store NAME (waiting up to MS, default\n"
    "  30000, for it); --check compares the result with the CPU reference, --fused and\n"
    "  --join-first run other variants, --repeat runs the GPU work N times, --device chooses\n"
    "  the device (default: backend.kind). Configured by MQX_CONFIG and MQX_*.\n";

Options parse(int argc, char** argv) {
  Options options;
  mqx::ssb::CommandLine commandLine(argc, argv, "ssb-" MQX_SSB_QUERY, kUsage);
  while (commandLine.next()) {
    const std::string_view argument = commandLine.argument();
    if (argument == "--data") {
      options.dataDir = commandLine.value();
    } else if (argument == "--shared") {
      options.shared = commandLine.value();
    } else if (argument == "--shared-wait-ms") {
      options.sharedWaitMilliseconds = commandLine.integer(0, "milliseconds (0 or more)");
    } else if (argument == "--check") {
      options.check = true;
    } else if (argument == "--fused" || argument == "--join-first") {
      auto variant = argument == "--fused" ? mqx::ssb::gpu::Variant::Fused : mqx::ssb::gpu::Variant::JoinFirst;
      if (options.variant != mqx::ssb::gpu::Variant::OperatorAtATime && options.variant != variant)
        commandLine.fail("--fused and --join-first exclude each other");
      options.variant = variant;
    } else if (argument == "--repeat") {
      options.repeat = commandLine.integer(1, "a positive count");
    } else if (argument == "--device") {
      options.device = commandLine.value();
      if (options.device != "auto" && options.device != "gpu" && options.device != "sim")
        commandLine.fail("--device: expected auto, gpu or sim, got '" + options.device + "'");
    } else {
      commandLine.fail("unknown argument '" + std::string(argument) + "'");
    }
  }
  if (options.dataDir.empty() && options.shared.empty()) commandLine.fail("--data DIR or --shared NAME is required");
  return options;
}

// The device named by --device, else by backend.kind: "gpu" or "sim".
std::string chooseDevice(const Options& options, const mqx::Config& config) {
  std::string wanted = options.device;
  if (wanted.empty())
    wanted = config.backend == mqx::BackendKind::Sim    ? "sim"
             : config.backend == mqx::BackendKind::Cuda ? "gpu"
                                                        : "auto";
#ifdef MQX_SSB_WITH_CUDA
  if (wanted == "auto") return mqx::ssb::gpu::cudaDevicePresent() ? "gpu" : "sim";
  return wanted;
#else
  if (wanted == "gpu") throw std::runtime_error("built without CUDA: only --device sim (or auto) runs here");
  return "sim";
#endif
}

std::unique_ptr<mqx::ssb::gpu::QueryDevice> openDevice(const std::string& kind, const mqx::Config& config) {
#ifdef MQX_SSB_WITH_CUDA
  if (kind == "gpu") return mqx::ssb::gpu::openCudaDevice();
#endif
  return std::make_unique<mqx::ssb::gpu::SimQueryDevice>(config, "ssb-" MQX_SSB_QUERY);
}

// What libmqx's manager did on the simulated device, one "# mqx" line each.
void printSimReport(const mqx::ssb::gpu::SimDeviceReport& report) {
  const mqx::Statistics& stats = report.statistics;
  std::printf("# mqx node %s\n", report.onNode ? "joined" : "alone");
  std::printf("# mqx evictions %llu\n", static_cast<unsigned long long>(stats.evictions));
  std::printf("# mqx bytes to device %llu\n", static_cast<unsigned long long>(stats.bytesToDevice));
  std::printf("# mqx bytes lazy avoided %llu\n", static_cast<unsigned long long>(stats.bytesAvoidedLazy));
  std::printf("# mqx bytes written back %llu\n", static_cast<unsigned long long>(stats.bytesWrittenBack));
  std::printf("# mqx sim transfer seconds %.6f\n", report.transfers.secondsToDevice + report.transfers.secondsToHost);
  std::printf("# mqx statistics %s\n", stats.toJson().c_str());
}

using Milliseconds = std::chrono::duration<double, std::milli>;

// Milliseconds since the kernel started this process (/proc/self/stat's
// start time against CLOCK_BOOTTIME, 10 ms resolution): the process's wall
// time includes what ran before main (loading, libmqx's start under
// mqx-run). Falls back to `mainStart` where /proc is not readable.
double processMilliseconds(std::chrono::steady_clock::time_point mainStart) {
  std::FILE* stat = std::fopen("/proc/self/stat", "re");
  if (stat != nullptr) {
    char buffer[1024];
    std::size_t length = std::fread(buffer, 1, sizeof buffer - 1, stat);
    std::fclose(stat);
    buffer[length] = '\0';
    // Field 22, counted after the command name's closing parenthesis.
    const char* field = std::strrchr(buffer, ')');
    unsigned long long startTicks = 0;
    for (int index = 2; field != nullptr && index < 22; ++index)
      field = std::strchr(field + 1, ' ');
    timespec now{};
    if (field != nullptr && std::sscanf(field + 1, "%llu", &startTicks) == 1 &&
        clock_gettime(CLOCK_BOOTTIME, &now) == 0) {
      double ticksPerSecond = static_cast<double>(sysconf(_SC_CLK_TCK));
      double nowMilliseconds = static_cast<double>(now.tv_sec) * 1e3 + now.tv_nsec / 1e6;
      double elapsed = nowMilliseconds - static_cast<double>(startTicks) * 1e3 / ticksPerSecond;
      if (elapsed > 0) return elapsed;
    }
  }
  return Milliseconds(std::chrono::steady_clock::now() - mainStart).count();
}

const char* variantName(mqx::ssb::gpu::Variant variant) {
  switch (variant) {
  case mqx::ssb::gpu::Variant::Fused: return "fused";
  case mqx::ssb::gpu::Variant::JoinFirst: return "join-first";
  case mqx::ssb::gpu::Variant::OperatorAtATime: break;
  }
  return "operator-at-a-time";
}

// The first line where two results' texts differ, for the check's message.
std::string firstDifferentLine(const std::string& expected, const std::string& actual) {
  std::size_t line = 1, start = 0;
  while (true) {
    std::size_t endExpected = expected.find('\n', start), endActual = actual.find('\n', start);
    std::string a = expected.substr(start, endExpected - start);
    std::string b = actual.substr(start, endActual - start);
    if (a != b || endExpected != endActual)
      return "line " + std::to_string(line) + ": expected '" + a + "', got '" + b + "'";
    if (endExpected == std::string::npos) return "the results differ";
    start = endExpected + 1;
    ++line;
  }
}

int runQuery(const Options& options, std::chrono::steady_clock::time_point mainStart) {
  using namespace mqx::ssb;
  auto query = parseQueryName(MQX_SSB_QUERY);
  if (!query) {
    std::fprintf(stderr, "unknown query %s\n", MQX_SSB_QUERY);
    return 2;
  }
  // Everything the GPU reads goes to host memory before the timing starts:
  // read from the files, or mapped from the loader's shared store.
  const auto loadStart = std::chrono::steady_clock::now();
  std::optional<SharedColumnStore> store;
  if (!options.shared.empty())
    store.emplace(SharedColumnStore::open(options.shared, std::chrono::milliseconds(options.sharedWaitMilliseconds)));
  SsbData data =
      SsbData::open(options.dataDir.empty() ? store->dataDirectory() : std::filesystem::path(options.dataDir));
  std::optional<ColumnCache> cacheStorage;
  if (store)
    cacheStorage.emplace(data, *store);
  else
    cacheStorage.emplace(data);
  ColumnCache& cache = *cacheStorage;
  gpu::QueryPlan plan = gpu::planQuery(*query, cache);
  for (const std::string& column : gpu::factColumns(plan))
    cache.column(TableId::Lineorder, column);
  const double loadMilliseconds = Milliseconds(std::chrono::steady_clock::now() - loadStart).count();

  // Opened after the columns are in host memory, closed before them: the
  // simulated device's lazy copies read the cache's columns until it goes.
  mqx::Config config = mqx::loadConfig();
  mqx::setLogLevel(config.logLevel);
  std::string kind = chooseDevice(options, config);
  std::unique_ptr<gpu::QueryDevice> device = openDevice(kind, config);

  gpu::QueryRun run;
  gpu::DenseAggregate first;
  double gpuMilliseconds = 0;
  std::string repeatMilliseconds; // each repeat's, for the timing line
  for (int i = 0; i < options.repeat; ++i) {
    run = gpu::runPlan(plan, cache, *device, options.variant);
    gpuMilliseconds += run.totalMilliseconds;
    char text[32];
    std::snprintf(text, sizeof text, "%s%.3f", i == 0 ? "" : ", ", run.totalMilliseconds);
    repeatMilliseconds += text;
    std::printf("# run %d total %.3f ms\n", i + 1, run.totalMilliseconds);
    if (i == 0) {
      first = run.aggregate;
    } else if (run.aggregate.sums != first.sums || run.aggregate.counts != first.counts) {
      std::printf("# check FAILED: repeat %d's aggregate differs from repeat 1's\n", i + 1);
      return 1;
    }
  }
  QueryResult result = gpu::decodeResult(plan, run.aggregate, cache);
  std::fputs(formatResult(result).c_str(), stdout);
  for (const gpu::OperatorTiming& step : run.operators)
    std::printf("# operator %-24s %10.3f ms %10.1f MB\n", step.name.c_str(), step.milliseconds,
                static_cast<double>(step.deviceBytes) / 1e6);
  std::printf("# device %s\n", device->name().c_str());
  std::printf("# variant %s\n", variantName(options.variant));
  std::printf("# uploaded %.1f MB\n", static_cast<double>(run.uploadedBytes) / 1e6);
  std::printf("# device peak %.1f MB\n", static_cast<double>(run.peakDeviceBytes) / 1e6);
  std::printf("# total %.3f ms\n", run.totalMilliseconds);
  if (auto* sim = dynamic_cast<gpu::SimQueryDevice*>(device.get())) printSimReport(sim->report());

  const auto checkStart = std::chrono::steady_clock::now();
  int status = 0;
  if (options.check) {
    std::optional<std::string_view> stored;
    if (store) stored = store->text(MQX_SSB_QUERY);
    std::string difference;
    if (stored) {
      std::string actual = formatResult(result);
      if (actual != *stored) difference = firstDifferentLine(std::string(*stored), actual);
    } else {
      difference = describeDifference(runReferenceQuery(*query, cache), result);
    }
    if (!difference.empty()) {
      std::printf("# check FAILED: %s\n", difference.c_str());
      status = 1;
    } else {
      std::printf("# check passed (%zu rows, reference %s)\n", result.rows.size(),
                  stored ? "from the shared store" : "computed here");
    }
  }
  const double checkMilliseconds = Milliseconds(std::chrono::steady_clock::now() - checkStart).count();
  // GPU work: the executor's timed phases (upload to download, every step
  // synchronised), summed over the repeats.
  const double processMs = processMilliseconds(mainStart);
  std::printf("# timing {\"repeat\": %d, \"gpu_ms\": %.3f, \"load_ms\": %.3f, \"check_ms\": %.3f, "
              "\"process_ms\": %.3f, \"gpu_fraction\": %.4f, \"columns\": \"%s\", "
              "\"repeat_ms\": [%s]}\n",
              options.repeat, gpuMilliseconds, loadMilliseconds, checkMilliseconds, processMs,
              processMs > 0 ? gpuMilliseconds / processMs : 0.0, store ? "shared" : "files",
              repeatMilliseconds.c_str());
  std::fflush(stdout);
  return status;
}

} // namespace

int main(int argc, char** argv) {
  const auto mainStart = std::chrono::steady_clock::now();
  Options options = parse(argc, argv);
  try {
    return runQuery(options, mainStart);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ssb-%s: %s\n", MQX_SSB_QUERY, error.what());
    return 2;
  }
}
