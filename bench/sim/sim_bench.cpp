// mqx-sim-bench: replays the synthetic query trace on the simulated device
// with a device budget a third of the footprint, once per replacement policy
// and granularity and once per ablation of the paper (§7.3: NoLazy, NoCow,
// NoRef, NoAccess, NoPage), plus the unoptimised reference with unlimited
// memory. Reports bytes moved and simulated transfer time; every run's
// query results are checked against a host reference.
//
//   mqx-sim-bench [--demo] [--json PATH] [--column-mib N] [--queries N]
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "query_trace.hpp"
#include "sim_bench_report.hpp"

namespace {

using mqx::Config;

struct Variant {
  std::string name;
  std::function<void(Config&)> apply;
};

std::vector<Variant> variants(bool demo) {
  using mqx::EvictionGranularity;
  using mqx::ReferenceDetection;
  using mqx::ReplacementKind;
  std::vector<Variant> list;
  for (auto [kind, label] : {std::pair{ReplacementKind::Cdr, "CDR"}, std::pair{ReplacementKind::Lru, "LRU"},
                             std::pair{ReplacementKind::Mru, "MRU"}, std::pair{ReplacementKind::Lfu, "LFU"},
                             std::pair{ReplacementKind::Random, "RANDOM"}}) {
    list.push_back({std::string(label), [kind](Config& c) { c.replacement = kind; }});
    if (!demo)
      list.push_back({std::string(label) + "/page", [kind](Config& c) {
                        c.replacement = kind;
                        c.evictionGranularity = EvictionGranularity::Page;
                      }});
  }
  if (demo) return list;
  list.push_back({"NoLazy", [](Config& c) { c.lazyTransfer = false; }});
  list.push_back({"NoCow", [](Config& c) { c.copyOnWrite = false; }});
  list.push_back({"NoRef", [](Config& c) { c.referenceDetection = ReferenceDetection::All; }});
  list.push_back({"NoAccess", [](Config& c) { c.accessAdvice = false; }});
  list.push_back({"NoPage", [](Config& c) { c.pageCoherence = false; }});
  list.push_back({"Raw (all off)", [](Config& c) {
                    c.lazyTransfer = false;
                    c.copyOnWrite = false;
                    c.accessAdvice = false;
                    c.pageCoherence = false;
                  }});
  return list;
}

std::string row(const mqx::bench::TraceResult& r) {
  const auto& t = r.transfers;
  const double gib = 1024.0 * 1024 * 1024;
  return fmt::format("| {:<14} | {:>9.2f} | {:>9.2f} | {:>9.3f} | {:>9} | {:>11.2f} | {:>10.2f} | {:>10.2f} | {:>6} |",
                     r.name, t.bytesToDevice / gib, t.bytesToHost / gib, t.secondsToDevice + t.secondsToHost,
                     r.statistics.evictions, r.statistics.bytesWrittenBack / gib, r.statistics.bytesAvoidedLazy / gib,
                     r.statistics.bytesCopiedOnHost / gib, r.correct ? "yes" : "NO");
}

const char* const kUsage =
    "usage: mqx-sim-bench [--demo] [--json PATH] [--column-mib N] [--queries N]\n"
    "  replays the synthetic query trace on the simulated device under every replacement policy and\n"
    "  ablation; --demo: a short run, --json: write the results to PATH, --column-mib: average input\n"
    "  column size (40), --queries: co-running queries (4)\n";

// A bad command line: one line naming what is wrong, exit status 2.
[[noreturn]] void commandLineError(const std::string& why) {
  std::fprintf(stderr, "mqx-sim-bench: %s (try --help)\n", why.c_str());
  std::exit(2);
}

// A positive count given to `option`, exactly as written (no sign, no
// trailing text).
template <typename Count> Count positiveCount(const std::string& option, const std::string& text) {
  Count count{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc{} || end != text.data() + text.size() || count < 1)
    commandLineError(option + ": expected a positive count, got '" + text + "'");
  return count;
}

} // namespace

int main(int argc, char** argv) {
  bool demo = false;
  std::string jsonPath;
  mqx::bench::TraceShape shape;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) commandLineError(argument + " needs a value");
      return argv[++i];
    };
    if (argument == "--help" || argument == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (argument == "--demo") {
      demo = true;
    } else if (argument == "--json") {
      jsonPath = next();
    } else if (argument == "--column-mib") {
      shape.columnMiB = positiveCount<std::size_t>(argument, next());
    } else if (argument == "--queries") {
      shape.queries = positiveCount<int>(argument, next());
    } else {
      commandLineError("unknown argument '" + argument + "'");
    }
  }
  if (demo) shape.columnMiB = std::min<std::size_t>(shape.columnMiB, 24);

  Config base;
  base.simCapacity = std::size_t{4} << 30;
  base.simGranularity = 2 << 20;
  base.pageSize = 8 << 20;
  base.simCopyBandwidthGBps = 25.0;
  // Footprint of the trace: queries x (4 columns + intermediates) ~ 4.9 x column size.
  const std::size_t footprint = shape.queries * shape.columnMiB * 49 / 10;
  base.deviceMemoryLimit = (footprint / 3) << 20;
  base.swapBufferLimit = std::size_t{8} << 30;

  std::printf("mqx on the simulated device: %d queries x %d runs, ~%zu MiB footprint, device budget %zu MiB, "
              "copies charged at %.0f GB/s\n\n",
              shape.queries, shape.repetitions, footprint, base.deviceMemoryLimit >> 20, base.simCopyBandwidthGBps);
  std::printf("| %-14s | %9s | %9s | %9s | %9s | %11s | %10s | %10s | %6s |\n", "variant", "H2D GiB", "D2H GiB",
              "xfer s", "evictions", "written GiB", "avoided GiB", "memcpy GiB", "exact");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(16, '-').c_str(), std::string(11, '-').c_str(),
              std::string(11, '-').c_str(), std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(13, '-').c_str(), std::string(12, '-').c_str(), std::string(12, '-').c_str(),
              std::string(8, '-').c_str());

  std::vector<mqx::bench::TraceResult> results;
  Config reference = base; // unlimited memory, no optimisation: the yardstick
  reference.deviceMemoryLimit = base.simCapacity;
  reference.lazyTransfer = false;
  reference.copyOnWrite = false;
  reference.accessAdvice = false;
  reference.pageCoherence = false;
  if (!demo) {
    results.push_back(mqx::bench::runTrace("unlimited/raw", reference, shape));
    std::printf("%s\n", row(results.back()).c_str());
  }
  bool allCorrect = true;
  for (const auto& variant : variants(demo)) {
    Config config = base;
    variant.apply(config);
    results.push_back(mqx::bench::runTrace(variant.name, config, shape));
    std::printf("%s\n", row(results.back()).c_str());
    if (!results.back().correct) {
      std::printf("  error: %s\n", results.back().error.c_str());
      allCorrect = false;
    }
    std::fflush(stdout);
  }
  std::printf("\n%s\n", allCorrect ? "every query result matched the host reference" : "SOME QUERY RESULTS WERE WRONG");
  if (!jsonPath.empty()) {
    mqx::bench::SimBenchRun run{mqx::bench::thisRun(), shape, base.deviceMemoryLimit, base.simCopyBandwidthGBps,
                                std::move(results)};
    if (!mqx::bench::writeJsonFile(jsonPath, mqx::bench::simBenchJson(run))) return 1;
    std::printf("results written to %s\n", jsonPath.c_str());
  }
  return allCorrect ? 0 : 1;
}
