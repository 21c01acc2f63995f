// kernelopt_bench: how long the kernel-level optimizer takes to plan n = 1..32
// concurrent kernels with H100 limits (target: under 50 us for n = 32).
//
// For every n and every instance family it draws seeded random instances,
// solves each one `--repeats` times back to back, and reports the per-solve
// time over instances (median, 90th percentile, maximum). It times the full
// solver (Algorithm 1 plus the register extension when needed) and
// Algorithm 1 alone. The table goes to stdout; with --json PATH the same
// numbers are written as JSON.
//
//   kernelopt_bench [--json PATH] [--instances N] [--repeats R] [--seed S]
#include "kernelopt/architectures.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"

#include "solver_bench_report.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using mqx::bench::SolverBenchRow;
using mqx::bench::SolverTimes;

using mqx::kernelopt::DeviceLimits;
using mqx::kernelopt::KernelDemand;
using mqx::kernelopt::KernelLevelOptimizer;

struct Options {
  std::string jsonPath;
  int instances = 200;
  int repeats = 50;
  std::uint64_t seed = 1;
};

[[noreturn]] void usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--json PATH] [--instances N] [--repeats R] [--seed S]\n", program);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--json"))
      options.jsonPath = value();
    else if (!std::strcmp(argv[i], "--instances"))
      options.instances = std::atoi(value());
    else if (!std::strcmp(argv[i], "--repeats"))
      options.repeats = std::atoi(value());
    else if (!std::strcmp(argv[i], "--seed"))
      options.seed = std::strtoull(value(), nullptr, 10);
    else
      usage(argv[0]);
  }
  if (options.instances <= 0 || options.repeats <= 0) usage(argv[0]);
  return options;
}

// The two instance families. Both fill a random share of the SM, so that
// most instances are feasible and the solver runs to the end rather than
// rejecting them early.
//  - mixed: demands filling 30-90% of an SM's threads, 16-40 registers,
//    shared memory on half the kernels; most kernels then have a single
//    launch option (Theorem 1 leaves no choice below 1024 threads per SM).
//  - flexible: every kernel limited to 64 or 128 threads per block with a
//    demand above one block, so that every kernel has several options and
//    the DP tables span all the slack the SM has. Each kernel needs at least
//    two of the 32 block slots, so beyond 16 kernels no instance fits.
enum class Family { Mixed, Flexible };

const char* name(Family family) { return family == Family::Mixed ? "mixed" : "flexible"; }

std::vector<KernelDemand> draw(std::mt19937_64& rng, const DeviceLimits& limits, int n, Family family) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double load = family == Family::Mixed ? 0.3 + 0.6 * unit(rng) : 0.2 + 0.5 * unit(rng);
  std::vector<double> weights(n);
  double total = 0.0;
  for (double& w : weights)
    total += (w = 0.2 + unit(rng));
  std::vector<KernelDemand> kernels(n);
  for (int i = 0; i < n; ++i) {
    KernelDemand& k = kernels[i];
    const double perSm = load * limits.maxThreadsPerSm * weights[i] / total;
    k.registersPerThread = 16 + static_cast<int>(25 * unit(rng));
    if (family == Family::Mixed) {
      k.threads = std::max<std::int64_t>(1, static_cast<std::int64_t>(perSm)) * limits.smCount;
      k.sharedMemoryPerBlock = unit(rng) < 0.5 ? 0 : static_cast<int>(unit(rng) * limits.sharedMemoryPerSm / (2.0 * n));
    } else {
      k.maxThreadsPerBlock = unit(rng) < 0.5 ? 64 : 128;
      k.threads = std::max<std::int64_t>(k.maxThreadsPerBlock + 1, static_cast<std::int64_t>(perSm)) * limits.smCount;
      k.sharedMemoryPerBlock = static_cast<int>(unit(rng) * 2048);
    }
  }
  return kernels;
}

SolverTimes summarise(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[static_cast<std::size_t>(q * (samples.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.9), samples.back()};
}

// Microseconds per call of `solve`, averaged over `repeats` back-to-back calls.
template <typename Solve> double timePerCall(int repeats, Solve&& solve) {
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r)
    solve();
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / repeats;
}

SolverBenchRow measure(const Options& options, const DeviceLimits& limits, int n, Family family) {
  KernelLevelOptimizer optimizer(limits);
  std::mt19937_64 rng(options.seed * 1000003 + n * 2 + (family == Family::Flexible));
  std::vector<double> full, algorithmOne;
  int feasible = 0, extension = 0;
  volatile int sink = 0; // keeps the timed calls from being optimised away
  for (int i = 0; i < options.instances; ++i) {
    const std::vector<KernelDemand> kernels = draw(rng, limits, n, family);
    const auto solution = optimizer.solve(kernels);
    feasible += solution.feasible;
    extension += solution.registerExtensionUsed;
    full.push_back(timePerCall(options.repeats, [&] { sink = sink + optimizer.solve(kernels).feasible; }));
    algorithmOne.push_back(
        timePerCall(options.repeats, [&] { sink = sink + optimizer.minimumSharedMemory(kernels).value_or(-1); }));
  }
  return {n,
          name(family),
          summarise(full),
          summarise(algorithmOne),
          100.0 * feasible / options.instances,
          100.0 * extension / options.instances};
}

} // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const DeviceLimits& limits = mqx::kernelopt::deviceLimits(mqx::kernelopt::Architecture::Sm90);
  fmt::print("kernel-level solver time, {} ({} instances x {} repeats per row, seed {})\n", limits.name,
             options.instances, options.repeats, options.seed);
  fmt::print("{:>3} {:>9} | {:>10} {:>10} {:>10} | {:>12} | {:>9} {:>10}\n", "n", "family", "median us", "p90 us",
             "max us", "alg.1 med us", "feasible%", "reg.ext.%");
  mqx::bench::SolverBenchRun run{mqx::bench::thisRun(), limits.name,  options.instances,
                                 options.repeats,       options.seed, {}};
  for (int n = 1; n <= 32; ++n)
    for (Family family : {Family::Mixed, Family::Flexible}) {
      const SolverBenchRow row = measure(options, limits, n, family);
      fmt::print("{:>3} {:>9} | {:>10.2f} {:>10.2f} {:>10.2f} | {:>12.2f} | {:>9.1f} {:>10.1f}\n", row.n, row.family,
                 row.full.median, row.full.p90, row.full.max, row.algorithmOne.median, row.feasiblePercent,
                 row.registerExtensionPercent);
      run.rows.push_back(row);
    }
  if (!options.jsonPath.empty()) {
    if (!mqx::bench::writeJsonFile(options.jsonPath, mqx::bench::solverBenchJson(run))) return 1;
    fmt::print("wrote {}\n", options.jsonPath);
  }
  return 0;
}
