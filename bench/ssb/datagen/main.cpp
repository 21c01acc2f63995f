// ssb-datagen: writes an SSB data directory.
//   ssb-datagen --sf 1 --seed 1 --out /tmp/ssb-sf1 [--threads N] [--quiet]
#include "ssb/common/error.hpp"
#include "ssb/datagen/generator.hpp"

#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kUsage =
    "usage: ssb-datagen --sf SCALE --out DIR [--seed N] [--threads N] [--quiet]\n"
    "  --sf SCALE   scale factor, fractional allowed (0 < SCALE <= 300)\n"
    "  --out DIR    output directory (created; existing column files are replaced)\n"
    "  --seed N     random seed (default 1); the same seed gives the same bytes\n"
    "  --threads N  lineorder worker threads (default: all hardware threads)\n"
    "  --quiet      no progress lines\n";

struct Arguments {
  mqx::ssb::GeneratorOptions options;
  bool haveScale = false;
  bool quiet = false;
};

[[noreturn]] void usageError(const std::string &why) {
  fmt::print(stderr, "ssb-datagen: {}\n{}", why, kUsage);
  std::exit(2);
}

Arguments parseArguments(int argc, char **argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usageError(std::string(flag) + " needs a value");
      return argv[++i];
    };
    try {
      if (flag == "--sf") {
        args.options.scaleFactor = std::stod(value());
        args.haveScale = true;
      } else if (flag == "--seed") {
        args.options.seed = std::stoull(value());
      } else if (flag == "--out") {
        args.options.outDir = value();
      } else if (flag == "--threads") {
        args.options.threads = static_cast<unsigned>(std::stoul(value()));
      } else if (flag == "--quiet") {
        args.quiet = true;
      } else if (flag == "--help" || flag == "-h") {
        fmt::print("{}", kUsage);
        std::exit(0);
      } else {
        usageError("unknown argument " + std::string(flag));
      }
    } catch (const std::logic_error &) { // stod/stoull: not a number or out of range
      usageError("bad value for " + std::string(flag));
    }
  }
  if (!args.haveScale)
    usageError("--sf is required");
  if (args.options.outDir.empty())
    usageError("--out is required");
  return args;
}

} // namespace

int main(int argc, char **argv) {
  Arguments args = parseArguments(argc, argv);
  if (!args.quiet)
    args.options.progress = [](const std::string &line) { fmt::print(stderr, "  {}\n", line); };
  auto start = std::chrono::steady_clock::now();
  try {
    mqx::ssb::Manifest manifest = mqx::ssb::generateSsb(args.options);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::int64_t rows = 0;
    for (const auto &table : manifest.tables) {
      fmt::print("{:<10} {:>12} rows\n", table.name, table.rows);
      rows += table.rows;
    }
    fmt::print("SF {} seed {}: {} rows in {:.2f} s ({:.1f} M rows/s) -> {}\n", manifest.scaleFactor,
               manifest.seed, rows, seconds, rows / seconds / 1e6, args.options.outDir.string());
  } catch (const std::invalid_argument &error) {
    usageError(error.what());
  } catch (const std::exception &error) {
    fmt::print(stderr, "ssb-datagen: {}\n", error.what());
    return 1;
  }
  return 0;
}
