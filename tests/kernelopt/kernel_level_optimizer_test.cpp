// Hand-computed cases of the kernel-level optimizer on the H100 (132 SMs,
// 32 blocks, 64 warps, 64 register units per partition, 228 KiB per SM).
#include "kernelopt/architectures.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"
#include "kernelopt/occupancy.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace mqx::kernelopt {
namespace {

const DeviceLimits &h100() { return deviceLimits(Architecture::Sm90); }

KernelDemand onEverySm(long long perSm, int registers = 16, int sharedMemory = 0, int maxThreads = 0) {
  return {perSm * 132, registers, sharedMemory, maxThreads};
}

// Kernel 1 needs 1056 threads per SM: 2 blocks of 17 warps (34) or 3 of 11
// (33). Kernel 2 needs 992 threads, one block of 31 warps. 34 + 31 > 64, so
// only the extra block fits: 3 x (4096 + 1024) + 1024 bytes of shared memory.
TEST(KernelLevelOptimizer, TheoremOneRoundingForcesAnExtraBlock) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(1056, 16, 4096), onEverySm(992)};
  const KernelLevelSolution solution = optimizer.solve(kernels);
  ASSERT_TRUE(solution.feasible);
  EXPECT_EQ(solution.launches[0].threadsPerBlock, 352);
  EXPECT_EQ(solution.launches[0].blocksPerSm, 3);
  EXPECT_EQ(solution.launches[0].gridBlocks, 3 * 132);
  EXPECT_EQ(solution.launches[1].threadsPerBlock, 992);
  EXPECT_EQ(solution.launches[1].blocksPerSm, 1);
  EXPECT_EQ(solution.launches[1].gridBlocks, 132);
  EXPECT_EQ(solution.usage.blocks, 4);
  EXPECT_EQ(solution.usage.warps, 64);
  EXPECT_EQ(solution.usage.sharedMemory, 3 * 5120 + 1024);
  // 16 registers = 512 per warp = 2 units of 256.
  EXPECT_EQ(solution.usage.registerUnits, 2 * 64);
  EXPECT_FALSE(solution.registerExtensionUsed);
}

// With 960 threads (30 warps) for kernel 2, 34 + 30 warps fit and the
// cheaper two-block option wins.
TEST(KernelLevelOptimizer, FewerBlocksWhenTheWarpsAllowIt) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(1056, 16, 4096), onEverySm(960)};
  const KernelLevelSolution solution = optimizer.solve(kernels);
  ASSERT_TRUE(solution.feasible);
  EXPECT_EQ(solution.launches[0].blocksPerSm, 2);
  EXPECT_EQ(solution.launches[0].threadsPerBlock, 544);
  EXPECT_EQ(solution.usage.sharedMemory, 2 * 5120 + 1024);
  EXPECT_EQ(optimizer.minimumSharedMemory(kernels), 2 * 5120 + 1024);
}

// Kernel X (130 threads per SM, at most 64 threads per block, 96
// registers = 12 units per warp, 2 KiB) and kernel Y (1000 threads, 48
// registers = 6 units per warp, 32 warps = 192 units). Algorithm 1's optimum
// runs X as 3 blocks of 2 warps (72 units): 264 > 256 units. The
// register-extended DP moves X to 5 blocks of 1 warp (60 units) at 6 KiB
// more shared memory.
TEST(KernelLevelOptimizer, RegisterExtensionWhenAlgorithmOneBreaksEquationTwo) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(130, 96, 2048, 64), onEverySm(1000, 48)};
  EXPECT_EQ(optimizer.minimumSharedMemory(kernels), 3 * 3072 + 1024);
  const KernelLevelSolution solution = optimizer.solve(kernels);
  ASSERT_TRUE(solution.feasible);
  EXPECT_TRUE(solution.registerExtensionUsed);
  EXPECT_EQ(solution.launches[0].blocksPerSm, 5);
  EXPECT_EQ(solution.launches[0].threadsPerBlock, 32);
  EXPECT_EQ(solution.launches[1].blocksPerSm, 1);
  EXPECT_EQ(solution.launches[1].threadsPerBlock, 1024);
  EXPECT_EQ(solution.usage.registerUnits, 60 + 192);
  EXPECT_EQ(solution.usage.sharedMemory, 5 * 3072 + 1024);
}

// Two 120 KiB blocks (121 KiB each with the reserve) exceed 228 KiB: the DP
// value V[n, B, W] is found, but it is larger than S.
TEST(KernelLevelOptimizer, SharedMemoryDecidesFeasibility) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(256, 32, 120 * 1024), onEverySm(256, 32, 120 * 1024)};
  EXPECT_EQ(optimizer.minimumSharedMemory(kernels), 2 * 121 * 1024);
  const KernelLevelSolution solution = optimizer.solve(kernels);
  EXPECT_FALSE(solution.feasible);
  EXPECT_EQ(solution.exceeded, ResourceSet(Resource::SharedMemory));
  EXPECT_TRUE(solution.launches.empty());
}

TEST(KernelLevelOptimizer, BlockSlotsBoundTheNumberOfKernels) {
  KernelLevelOptimizer optimizer(h100());
  std::vector<KernelDemand> kernels(32, onEverySm(32));
  const KernelLevelSolution full = optimizer.solve(kernels);
  ASSERT_TRUE(full.feasible);
  EXPECT_EQ(full.usage.blocks, 32);
  EXPECT_EQ(full.usage.warps, 32);
  kernels.push_back(onEverySm(32));
  const KernelLevelSolution over = optimizer.solve(kernels);
  EXPECT_FALSE(over.feasible);
  EXPECT_EQ(over.exceeded, ResourceSet(Resource::Blocks));
  EXPECT_FALSE(optimizer.minimumSharedMemory(kernels).has_value());
}

TEST(KernelLevelOptimizer, WarpSlotsBoundTheTotalDemand) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> fits{onEverySm(1024), onEverySm(1024)};
  EXPECT_TRUE(optimizer.fits(fits));
  const std::vector<KernelDemand> over{onEverySm(1024), onEverySm(1025)};
  const KernelLevelSolution solution = optimizer.solve(over);
  EXPECT_FALSE(solution.feasible);
  EXPECT_EQ(solution.exceeded, ResourceSet(Resource::Warps));
}

// 64 registers = 8 units per warp: 32 warps take 256 units, all there are.
TEST(KernelLevelOptimizer, RegistersBoundTheTotalDemand) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(512, 64), onEverySm(512, 64), onEverySm(32, 64)};
  const KernelLevelSolution solution = optimizer.solve(kernels);
  EXPECT_FALSE(solution.feasible);
  EXPECT_EQ(solution.exceeded, ResourceSet(Resource::Registers));
  EXPECT_TRUE(optimizer.fits(std::vector<KernelDemand>{onEverySm(512, 64), onEverySm(512, 64)}));
}

TEST(KernelLevelOptimizer, NamesAKernelThatCannotRunAlone) {
  KernelLevelOptimizer optimizer(h100());
  const std::vector<KernelDemand> kernels{onEverySm(256), onEverySm(256, 300)};
  const KernelLevelSolution solution = optimizer.solve(kernels);
  EXPECT_FALSE(solution.feasible);
  EXPECT_EQ(solution.unplaceableKernel, 1u);
  EXPECT_EQ(solution.exceeded, ResourceSet(Resource::Registers));
}

TEST(KernelLevelOptimizer, NoKernelsFitTrivially) {
  KernelLevelOptimizer optimizer(h100());
  const KernelLevelSolution solution = optimizer.solve({});
  EXPECT_TRUE(solution.feasible);
  EXPECT_EQ(solution.usage.blocks, 0);
  EXPECT_EQ(optimizer.minimumSharedMemory({}), 0);
}

// For one kernel the optimizer and the occupancy model must agree: a demand
// fits iff some block size runs enough blocks at once to hold it.
TEST(KernelLevelOptimizer, SingleKernelFeasibilityMatchesTheOccupancyModel) {
  std::mt19937_64 rng(42);
  for (Architecture architecture : knownArchitectures()) {
    const DeviceLimits &limits = deviceLimits(architecture);
    KernelLevelOptimizer optimizer(limits);
    for (int trial = 0; trial < 300; ++trial) {
      const KernelDemand kernel{
          std::uniform_int_distribution<long long>(1, 2200)(rng) * limits.smCount,
          std::uniform_int_distribution<int>(0, 160)(rng),
          std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 0 : std::uniform_int_distribution<int>(0, 80000)(rng),
          0};
      long long capacity = 0;
      for (int warps = 1; warps <= limits.maxWarpsPerBlock(); ++warps) {
        const Occupancy occupancy =
            computeOccupancy(limits, {kernel.registersPerThread, kernel.sharedMemoryPerBlock, warps * 32});
        capacity = std::max(capacity, static_cast<long long>(occupancy.activeBlocksPerSm) * warps * 32);
      }
      SCOPED_TRACE(limits.name + " threads/SM " + std::to_string(threadsPerSm(limits, kernel)) + " regs " +
                   std::to_string(kernel.registersPerThread) + " smem " + std::to_string(kernel.sharedMemoryPerBlock));
      EXPECT_EQ(optimizer.fits(std::vector<KernelDemand>{kernel}), capacity >= threadsPerSm(limits, kernel));
    }
  }
}

} // namespace
} // namespace mqx::kernelopt
