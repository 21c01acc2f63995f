#include "kernelopt/architectures.hpp"
#include "kernelopt/launch_options.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace mqx::kernelopt {
namespace {

const DeviceLimits &h100() { return deviceLimits(Architecture::Sm90); }

// A demand of `perSm` threads on every one of the H100's 132 SMs.
KernelDemand onEverySm(long long perSm, int registers = 16, int sharedMemory = 0, int maxThreads = 0) {
  return {perSm * 132, registers, sharedMemory, maxThreads};
}

TEST(LaunchOptions, DemandIsDividedOverTheSms) {
  EXPECT_EQ(threadsPerSm(h100(), {132 * 100, 0, 0, 0}), 100);
  EXPECT_EQ(threadsPerSm(h100(), {132 * 100 + 1, 0, 0, 0}), 101);
}

// Up to 1024 threads per SM one block of ceil(c/32) warps uses the fewest
// warps and blocks there are: no other option survives.
TEST(LaunchOptions, SmallDemandHasOneOption) {
  const LaunchOptions options = launchOptions(h100(), onEverySm(300));
  ASSERT_EQ(options.options.size(), 1u);
  EXPECT_EQ(options.options[0].blocksPerSm, 1);
  EXPECT_EQ(options.options[0].warpsPerBlock, 10);
  EXPECT_EQ(options.options[0].warps, 10);
}

// 1056 threads: 2 blocks of ceil(1056/64) = 17 warps (34), or 3 blocks of
// ceil(1056/96) = 11 warps (33). Every larger b needs more warps than 33.
TEST(LaunchOptions, RoundingOfTheoremOneCreatesAChoice) {
  const LaunchOptions options = launchOptions(h100(), onEverySm(1056, 40, 1000));
  ASSERT_EQ(options.options.size(), 2u);
  EXPECT_EQ(options.options[0].blocksPerSm, 2);
  EXPECT_EQ(options.options[0].warpsPerBlock, 17);
  EXPECT_EQ(options.options[0].warps, 34);
  EXPECT_EQ(options.options[1].blocksPerSm, 3);
  EXPECT_EQ(options.options[1].warpsPerBlock, 11);
  EXPECT_EQ(options.options[1].warps, 33);
  // 40 registers: 1280 per warp = 5 units of 256. 1000 + 1024 bytes round
  // up to 2048 per block.
  EXPECT_EQ(options.options[1].registerUnits, 33 * 5);
  EXPECT_TRUE(options.options[1].fitsRegisterFile); // 4 x floor(64 / 5) = 48 warps
  EXPECT_EQ(options.options[1].sharedMemory, 3 * 2048);
}

TEST(LaunchOptions, OptionForABlockCountFollowsTheoremOne) {
  const KernelDemand kernel = onEverySm(1000);
  for (int blocks = 1; blocks <= 32; ++blocks) {
    const LaunchOption option = launchOptionFor(h100(), kernel, blocks);
    EXPECT_EQ(option.blocksPerSm, blocks);
    EXPECT_EQ(option.warpsPerBlock, (1000 + 32 * blocks - 1) / (32 * blocks));
  }
  // One block of at most 32 warps cannot hold 1025 threads.
  EXPECT_EQ(launchOptionFor(h100(), onEverySm(1025), 1).blocksPerSm, 0);
}

// A kernel's own block limit (here 256 threads) raises the fewest blocks.
TEST(LaunchOptions, KernelBlockLimitIsRespected) {
  const LaunchOptions options = launchOptions(h100(), onEverySm(1000, 16, 0, 256));
  ASSERT_EQ(options.options.size(), 1u);
  EXPECT_EQ(options.options[0].blocksPerSm, 4);
  EXPECT_EQ(options.options[0].warpsPerBlock, 8);
}

TEST(LaunchOptions, ReportsWhyAKernelHasNoOption) {
  EXPECT_EQ(launchOptions(h100(), onEverySm(256, 300)).obstacles, ResourceSet(Resource::Registers));
  EXPECT_EQ(launchOptions(h100(), onEverySm(256, 32, 300 * 1024)).obstacles, ResourceSet(Resource::SharedMemory));
  EXPECT_EQ(launchOptions(h100(), onEverySm(2049)).obstacles, ResourceSet(Resource::Warps));
  // One-warp blocks: 1056 threads need 33 blocks, one more than the slots.
  EXPECT_TRUE(launchOptions(h100(), onEverySm(1056, 16, 0, 32)).obstacles.contains(Resource::Blocks));
}

TEST(LaunchOptions, RejectsInvalidDemands) {
  EXPECT_THROW(launchOptions(h100(), {0, 0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(launchOptions(h100(), {10, -1, 0, 0}), std::invalid_argument);
  EXPECT_THROW(launchOptions(h100(), {10, 0, -1, 0}), std::invalid_argument);
  EXPECT_THROW(launchOptions(h100(), {10, 0, 0, -1}), std::invalid_argument);
}

} // namespace
} // namespace mqx::kernelopt
