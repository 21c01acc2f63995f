#include "kernelopt/resource.hpp"

#include <gtest/gtest.h>

namespace mqx::kernelopt {
namespace {

TEST(ResourceSet, CollectsAndPrintsResourcesInAFixedOrder) {
  ResourceSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.toString(), "none");
  set.add(Resource::Blocks).add(Resource::Warps);
  EXPECT_TRUE(set.contains(Resource::Warps));
  EXPECT_TRUE(set.contains(Resource::Blocks));
  EXPECT_FALSE(set.contains(Resource::Registers));
  EXPECT_EQ(set.toString(), "warps|blocks");
  EXPECT_EQ(ResourceSet(Resource::SharedMemory) | Resource::Registers,
            ResourceSet(Resource::Registers) | Resource::SharedMemory);
}

} // namespace
} // namespace mqx::kernelopt
