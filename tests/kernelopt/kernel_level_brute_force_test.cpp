// The kernel-level optimizer against exhaustive search on thousands of
// seeded random instances: Algorithm 1 must reach the exact optimum of
// Eqs. (11)-(15), and the solver the exact optimum with S and R as well.
#include "brute_force.hpp"
#include "random_instances.hpp"

#include "kernelopt/architectures.hpp"
#include "kernelopt/co_residency.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace mqx::kernelopt {
namespace {

using testing::bruteForceKernelLevel;
using testing::describe;

// Independent checks of a returned solution: every demand is covered and
// the launches fit an SM together.
void expectValidSolution(const DeviceLimits &limits, const std::vector<KernelDemand> &kernels,
                         const KernelLevelSolution &solution) {
  ASSERT_EQ(solution.launches.size(), kernels.size());
  std::vector<ResidentBlocks> resident;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const KernelLaunch &launch = solution.launches[i];
    EXPECT_GE(static_cast<long long>(launch.threadsPerBlock) * launch.gridBlocks,
              threadsPerSm(limits, kernels[i]) * limits.smCount);
    EXPECT_EQ(launch.gridBlocks, static_cast<long long>(launch.blocksPerSm) * limits.smCount);
    if (kernels[i].maxThreadsPerBlock > 0) {
      EXPECT_LE(launch.threadsPerBlock, kernels[i].maxThreadsPerBlock);
    }
    resident.push_back(
        {{kernels[i].registersPerThread, kernels[i].sharedMemoryPerBlock, launch.threadsPerBlock}, launch.blocksPerSm});
  }
  EXPECT_TRUE(fitTogether(limits, resident)) << exceededBy(limits, resident).toString();
}

struct Tally {
  int feasible = 0;
  int infeasible = 0;
  int registerExtension = 0;
  int registersBind = 0; // the exact optimum is worse than Algorithm 1's
};

void compareWithBruteForce(const DeviceLimits &limits, const std::vector<KernelDemand> &kernels, std::uint64_t seed,
                           Tally &tally) {
  SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + describe(limits) + "\n" + describe(kernels));
  KernelLevelOptimizer optimizer(limits);
  const auto expected = bruteForceKernelLevel(limits, kernels);
  EXPECT_EQ(optimizer.minimumSharedMemory(kernels), expected.paperModel) << "Algorithm 1 missed the optimum";
  const KernelLevelSolution solution = optimizer.solve(kernels);
  ASSERT_EQ(solution.feasible, expected.fullModel.has_value()) << "exceeded: " << solution.exceeded.toString();
  if (!solution.feasible) {
    EXPECT_FALSE(solution.exceeded.empty());
    ++tally.infeasible;
    return;
  }
  EXPECT_EQ(solution.usage.sharedMemory, *expected.fullModel);
  if (*expected.fullModel > *expected.paperModel)
    ++tally.registersBind;
  expectValidSolution(limits, kernels, solution);
  ++tally.feasible;
  if (solution.registerExtensionUsed)
    ++tally.registerExtension;
}

TEST(KernelLevelBruteForce, MatchesExhaustiveSearchOnRandomToyDevices) {
  Tally tally;
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) {
    std::mt19937_64 rng(seed);
    const DeviceLimits limits = testing::randomToyDevice(rng);
    const std::size_t count = 1 + seed % 5;
    const double load = std::uniform_real_distribution<double>(0.1, 1.1)(rng);
    compareWithBruteForce(limits, testing::randomKernels(rng, limits, count, load), seed, tally);
    if (::testing::Test::HasFailure())
      break; // one replayable seed is enough
  }
  // The instances must exercise every branch, or the comparison proves little.
  EXPECT_GT(tally.feasible, 4000);
  EXPECT_GT(tally.infeasible, 4000);
}

// Instances where Algorithm 1's optimum breaks the register limit while
// another assignment meets it: exhaustive search gives the register use of
// both, and the device gets a register file in between. The
// register-extended DP must then find the exact optimum.
TEST(KernelLevelBruteForce, RegisterExtensionMatchesExhaustiveSearch) {
  Tally tally;
  int built = 0;
  for (std::uint64_t seed = 1; seed <= 30000 && built < 1000; ++seed) {
    std::mt19937_64 rng(seed * 104729);
    DeviceLimits limits = testing::randomManyOptionDevice(rng);
    const auto kernels = testing::randomManyOptionKernels(rng, limits);
    const auto unlimited = bruteForceKernelLevel(limits, kernels);
    if (!unlimited.paperModel)
      continue;
    // Register units for the whole SM, at least one per partition.
    const int fewest = std::max(limits.registerPartitions, *unlimited.fewestRegisters);
    if (fewest >= *unlimited.registersAtPaperOptimum)
      continue;
    const int units = std::uniform_int_distribution<int>(fewest, *unlimited.registersAtPaperOptimum - 1)(rng);
    limits.registersPerSm = limits.registerAllocationUnit * units;
    ++built;
    compareWithBruteForce(limits, kernels, seed * 104729, tally);
    if (::testing::Test::HasFailure())
      break;
  }
  EXPECT_GE(built, 500);
  EXPECT_EQ(tally.registerExtension + tally.infeasible, built); // Algorithm 1 alone never suffices here
  EXPECT_GT(tally.registersBind, 250);
  std::printf("%d register-bound instances, %d feasible\n", built, tally.feasible);
}

TEST(KernelLevelBruteForce, MatchesExhaustiveSearchWithH100Limits) {
  const DeviceLimits &limits = deviceLimits(Architecture::Sm90);
  Tally tally;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    const std::size_t count = 1 + seed % 3;
    const double load = std::uniform_real_distribution<double>(0.3, 1.2)(rng);
    compareWithBruteForce(limits, testing::randomKernels(rng, limits, count, load), seed * 7919, tally);
    if (::testing::Test::HasFailure())
      break;
  }
  EXPECT_GT(tally.feasible, 50);
  EXPECT_GT(tally.infeasible, 10);
}

} // namespace
} // namespace mqx::kernelopt
