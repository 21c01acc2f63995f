// The multi-kernel experiments of the cuda-streams paper, §IV-A and §IV-B:
// which blocks of two kernels run on one MP of the GTX 680 at once.
#include "paper_devices.hpp"

#include "kernelopt/co_residency.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mqx::kernelopt {
namespace {

using namespace testing; // gtx680() and the kernels A to F of the cuda-streams paper

ResourceSet exceeded(std::vector<ResidentBlocks> resident) { return exceededBy(gtx680(), resident); }

// First experiment: one block of A and one of B (64 warps); warps bind.
TEST(CoResidency, OneBlockOfAAndOneOfB) {
  EXPECT_TRUE(exceeded({{kKernelA, 1}, {kKernelB, 1}}).empty());
  // A third kernel's 8 warps would exceed the 64 warp slots (registers:
  // 64 + 160 + 16 = 240 of 256 units).
  EXPECT_EQ(exceeded({{kKernelA, 1}, {kKernelB, 1}, {kKernelC, 1}}), ResourceSet(Resource::Warps));
  // §IV-B: two blocks of A fit, two of B need more registers than an MP has.
  EXPECT_TRUE(exceeded({{kKernelA, 2}}).empty());
  EXPECT_EQ(exceeded({{kKernelB, 2}}), ResourceSet(Resource::Registers));
}

// Second experiment: one block of C and five of D use all 65536 registers.
TEST(CoResidency, OneBlockOfCAndFiveOfD) {
  EXPECT_TRUE(exceeded({{kKernelC, 1}, {kKernelD, 5}}).empty());
  EXPECT_EQ(exceeded({{kKernelC, 1}, {kKernelD, 6}}), ResourceSet(Resource::Registers));
  EXPECT_EQ(exceeded({{kKernelC, 2}, {kKernelD, 5}}), ResourceSet(Resource::Registers));
}

// Third experiment: one block of E and one of F fill the 48 KiB.
TEST(CoResidency, OneBlockOfEAndOneOfF) {
  EXPECT_TRUE(exceeded({{kKernelE, 1}, {kKernelF, 1}}).empty());
  EXPECT_EQ(exceeded({{kKernelE, 2}, {kKernelF, 1}}), ResourceSet(Resource::SharedMemory));
}

TEST(CoResidency, BlockSlotsAndPerBlockLimits) {
  EXPECT_EQ(exceeded({{{0, 0, 32}, 10}, {{0, 0, 32}, 7}}), ResourceSet(Resource::Blocks));
  EXPECT_EQ(exceeded({{{64, 0, 32}, 1}}), ResourceSet(Resource::Registers)); // 64 > 63 per thread
  EXPECT_EQ(exceeded({{{0, 49153, 32}, 1}}), ResourceSet(Resource::SharedMemory));
  EXPECT_TRUE(exceeded({}).empty());
}

} // namespace
} // namespace mqx::kernelopt
