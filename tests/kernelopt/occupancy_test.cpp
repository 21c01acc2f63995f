#include "paper_devices.hpp"

#include "kernelopt/architectures.hpp"
#include "kernelopt/occupancy.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace mqx::kernelopt {
namespace {

using namespace testing; // gtx680() and the kernels A to F of the cuda-streams paper

// §IV-B: "each MP can at the same time execute up to two blocks of A, only
// one block of B"; Table III/IV: occupancy 100% for A, 50% for B.
TEST(Occupancy, PaperKernelsAAndBOnTheGtx680) {
  const Occupancy a = computeOccupancy(gtx680(), kKernelA);
  EXPECT_EQ(a.activeBlocksPerSm, 2);
  EXPECT_EQ(a.limitingFactors, ResourceSet(Resource::Warps));
  EXPECT_DOUBLE_EQ(a.fraction(gtx680()), 1.0);
  // 33 registers -> 1056 per warp -> 1280 after rounding to 256 (the paper's
  // "40 registers" per thread); 16384 / 1280 = 12 warps per partition.
  const Occupancy b = computeOccupancy(gtx680(), kKernelB);
  EXPECT_EQ(b.activeBlocksPerSm, 1);
  EXPECT_EQ(b.limitingFactors, ResourceSet(Resource::Registers));
  EXPECT_EQ(b.blockLimitRegisters, 1);
  EXPECT_EQ(b.allocatedRegistersPerBlock, 1280 * 32);
  EXPECT_DOUBLE_EQ(b.fraction(gtx680()), 0.5);
}

// Table III: C runs at 100% occupancy, D at 63% (five blocks, §IV-A: "up to
// one block of kernel C and five blocks of kernel D").
TEST(Occupancy, PaperKernelsCAndDOnTheGtx680) {
  const Occupancy c = computeOccupancy(gtx680(), kKernelC);
  EXPECT_EQ(c.activeBlocksPerSm, 8);
  EXPECT_EQ(c.limitingFactors, ResourceSet(Resource::Warps));
  EXPECT_DOUBLE_EQ(c.fraction(gtx680()), 1.0);
  const Occupancy d = computeOccupancy(gtx680(), kKernelD);
  EXPECT_EQ(d.activeBlocksPerSm, 5);
  EXPECT_EQ(d.limitingFactors, ResourceSet(Resource::Registers));
  EXPECT_DOUBLE_EQ(d.fraction(gtx680()), 0.625);
}

// E and F take 24 KiB of the 48 KiB per SM: two blocks each. (Table III's
// occupancy column ignores shared memory; §IV-A's third experiment shows it
// is the bound.)
TEST(Occupancy, PaperKernelsEAndFAreBoundBySharedMemory) {
  const Occupancy e = computeOccupancy(gtx680(), kKernelE);
  EXPECT_EQ(e.activeBlocksPerSm, 2);
  EXPECT_EQ(e.limitingFactors, ResourceSet(Resource::SharedMemory));
  const Occupancy f = computeOccupancy(gtx680(), kKernelF);
  EXPECT_EQ(f.activeBlocksPerSm, 2);
  EXPECT_EQ(f.limitingFactors, ResourceSet(Resource::SharedMemory));
  EXPECT_EQ(f.blockLimitRegisters, 5);
}

// Eq. (1) and Fig. 5: kernel A in blocks of 1024 threads, two blocks per MP
// on eight MPs: 16 blocks per round, so eight streams of four blocks (32
// blocks) take two rounds and one stream takes one.
TEST(Occupancy, RunningRoundsOfFigureFive) {
  const Occupancy a = computeOccupancy(gtx680(), kKernelA);
  EXPECT_EQ(runningRounds(gtx680(), a, 4), 1);
  EXPECT_EQ(runningRounds(gtx680(), a, 16), 1);
  EXPECT_EQ(runningRounds(gtx680(), a, 32), 2);
  EXPECT_EQ(runningRounds(gtx680(), a, 33), 3);
  const Occupancy none = computeOccupancy(gtx680(), {64, 0, 256});
  EXPECT_EQ(none.activeBlocksPerSm, 0);
  EXPECT_FALSE(runningRounds(gtx680(), none, 4).has_value());
}

const DeviceLimits &h100() { return deviceLimits(Architecture::Sm90); }

// 8 warps per block, 64 warp slots: 8 blocks. 32 registers/thread = 1024 per
// warp = 4 units; 64 units per partition hold 16 warps, 64 per SM: 8 blocks.
TEST(Occupancy, H100FullOccupancyTiesWarpsAndRegisters) {
  const Occupancy o = computeOccupancy(h100(), {32, 0, 256});
  EXPECT_EQ(o.activeBlocksPerSm, 8);
  EXPECT_EQ(o.limitingFactors, ResourceSet(Resource::Warps) | Resource::Registers);
  // No shared memory requested, but the driver still reserves 1 KiB.
  EXPECT_EQ(o.allocatedSharedMemoryPerBlock, 1024);
  EXPECT_EQ(o.blockLimitSharedMemory, 228);
  EXPECT_DOUBLE_EQ(o.fraction(h100()), 1.0);
}

// 48 KiB + 1 KiB reserve = 50176 bytes; 233472 / 50176 = 4.65: 4 blocks.
TEST(Occupancy, H100SharedMemoryCountsTheReserve) {
  const Occupancy o = computeOccupancy(h100(), {64, 48 * 1024, 128});
  EXPECT_EQ(o.blockLimitSharedMemory, 4);
  EXPECT_EQ(o.blockLimitRegisters, 8); // 2048 regs/warp: 8 warps per partition
  EXPECT_EQ(o.activeBlocksPerSm, 4);
  EXPECT_EQ(o.limitingFactors, ResourceSet(Resource::SharedMemory));
}

// 227 KiB is the opt-in maximum: one block uses the whole 228 KiB with the
// reserve; one more 128-byte unit and the block cannot launch.
TEST(Occupancy, H100LargestSharedMemoryBlock) {
  EXPECT_EQ(computeOccupancy(h100(), {32, 227 * 1024, 256}).activeBlocksPerSm, 1);
  const Occupancy tooBig = computeOccupancy(h100(), {32, 227 * 1024 + 1, 256});
  EXPECT_EQ(tooBig.activeBlocksPerSm, 0);
  EXPECT_EQ(tooBig.limitingFactors, ResourceSet(Resource::SharedMemory));
}

// 65 registers -> 2080 per warp -> 2304; 32 warps need 73728 > 65536
// registers per block: the block cannot launch at all.
TEST(Occupancy, H100RegistersPerBlockLimit) {
  const Occupancy o = computeOccupancy(h100(), {65, 0, 1024});
  EXPECT_EQ(o.activeBlocksPerSm, 0);
  EXPECT_EQ(o.limitingFactors, ResourceSet(Resource::Registers));
  EXPECT_EQ(computeOccupancy(h100(), {64, 0, 1024}).activeBlocksPerSm, 1);
  EXPECT_EQ(computeOccupancy(h100(), {256, 0, 32}).activeBlocksPerSm, 0); // beyond 255 per thread
}

// 255 registers -> 8192 per warp: 2 warps per partition, 8 per SM; a block
// of 3 warps passes the per-block check (3 rounds up to 4 warps = 32768).
TEST(Occupancy, H100MaximumRegistersPerThread) {
  const Occupancy o = computeOccupancy(h100(), {255, 0, 96});
  EXPECT_EQ(o.blockLimitRegisters, 2);
  EXPECT_EQ(o.activeBlocksPerSm, 2);
}

// One-warp blocks without registers or shared memory: the 32 block slots.
TEST(Occupancy, H100BlockSlots) {
  const Occupancy o = computeOccupancy(h100(), {0, 0, 32});
  EXPECT_EQ(o.blockLimitRegisters, std::numeric_limits<int>::max());
  EXPECT_EQ(o.activeBlocksPerSm, 32);
  EXPECT_EQ(o.limitingFactors, ResourceSet(Resource::Blocks));
}

TEST(Occupancy, OtherArchitectures) {
  // sm_75: 32 warp slots.
  EXPECT_EQ(computeOccupancy(deviceLimits(Architecture::Sm75), {0, 0, 256}).activeBlocksPerSm, 4);
  // sm_86: 48 warp slots hold three 16-warp blocks.
  EXPECT_EQ(computeOccupancy(deviceLimits(Architecture::Sm86), {0, 0, 512}).activeBlocksPerSm, 3);
  // sm_80: 64 registers -> 8 units per warp, 8 warps per partition: 4 blocks of 8 warps.
  EXPECT_EQ(computeOccupancy(deviceLimits(Architecture::Sm80), {64, 0, 256}).activeBlocksPerSm, 4);
  // sm_80: 100 KiB + 1 KiB of 164 KiB: one block.
  EXPECT_EQ(computeOccupancy(deviceLimits(Architecture::Sm80), {32, 100 * 1024, 128}).activeBlocksPerSm, 1);
  // sm_70: 1000 bytes round up to 1024 (256-byte unit, no reserve): 96 would fit, 32 block slots do.
  const Occupancy volta = computeOccupancy(deviceLimits(Architecture::Sm70), {16, 1000, 32});
  EXPECT_EQ(volta.blockLimitSharedMemory, 96);
  EXPECT_EQ(volta.activeBlocksPerSm, 32);
}

TEST(Occupancy, OversizedBlocksCannotLaunch) {
  const Occupancy o = computeOccupancy(h100(), {0, 0, 1025});
  EXPECT_EQ(o.activeBlocksPerSm, 0);
  EXPECT_TRUE(o.limitingFactors.contains(Resource::Warps));
}

TEST(Occupancy, RejectsInvalidInput) {
  EXPECT_THROW(computeOccupancy(h100(), {32, 0, 0}), std::invalid_argument);
  EXPECT_THROW(computeOccupancy(h100(), {-1, 0, 32}), std::invalid_argument);
  EXPECT_THROW(computeOccupancy(h100(), {32, -1, 32}), std::invalid_argument);
  DeviceLimits broken = h100();
  broken.smCount = 0;
  EXPECT_THROW(computeOccupancy(broken, {32, 0, 32}), std::invalid_argument);
}

} // namespace
} // namespace mqx::kernelopt
