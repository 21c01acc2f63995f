// ssb-datagen: writes an SSB data directory.
//   ssb-datagen --sf 1 --seed 1 --out /tmp/ssb-sf1 [--threads N] [--quiet]
#include "ssb/common/command_line.hpp"
#include "ssb/common/error.hpp"
#include "ssb/datagen/generator.hpp"

#include <fmt/core.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kUsage = "usage: ssb-datagen --sf SCALE --out DIR [--seed N] [--threads N] [--quiet]\n"
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

Arguments parseArguments(mqx::ssb::CommandLine& commandLine) {
  Arguments args;
  while (commandLine.next()) {
    std::string_view flag = commandLine.argument();
    try {
      if (flag == "--sf") {
        args.options.scaleFactor = std::stod(commandLine.value());
        args.haveScale = true;
      } else if (flag == "--seed") {
        args.options.seed = std::stoull(commandLine.value());
      } else if (flag == "--out") {
        args.options.outDir = commandLine.value();
      } else if (flag == "--threads") {
        args.options.threads = static_cast<unsigned>(std::stoul(commandLine.value()));
      } else if (flag == "--quiet") {
        args.quiet = true;
      } else {
        commandLine.fail("unknown argument " + std::string(flag));
      }
    } catch (const std::logic_error&) { // stod/stoull: not a number or out of range
      commandLine.fail("bad value for " + std::string(flag));
    }
  }
  if (!args.haveScale) commandLine.fail("--sf is required");
  if (args.options.outDir.empty()) commandLine.fail("--out is required");
  return args;
}

} // namespace

int main(int argc, char** argv) {
  // Kept for the generator's refusal of the options (std::invalid_argument).
  mqx::ssb::CommandLine commandLine(argc, argv, "ssb-datagen", std::string(kUsage),
                                    mqx::ssb::CommandLine::ErrorStyle::PrintUsage);
  Arguments args = parseArguments(commandLine);
  if (!args.quiet) args.options.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
  auto start = std::chrono::steady_clock::now();
  try {
    mqx::ssb::Manifest manifest = mqx::ssb::generateSsb(args.options);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::int64_t rows = 0;
    for (const auto& table : manifest.tables) {
      fmt::print("{:<10} {:>12} rows\n", table.name, table.rows);
      rows += table.rows;
    }
    fmt::print("SF {} seed {}: {} rows in {:.2f} s ({:.1f} M rows/s) -> {}\n", manifest.scaleFactor, manifest.seed,
               rows, seconds, rows / seconds / 1e6, args.options.outDir.string());
  } catch (const std::invalid_argument& error) {
    commandLine.fail(error.what());
  } catch (const std::exception& error) {
    fmt::print(stderr, "ssb-datagen: {}\n", error.what());
    return 1;
  }
  return 0;
}
