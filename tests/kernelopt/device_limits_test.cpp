#include "kernelopt/architectures.hpp"
#include "kernelopt/device_attributes.hpp"
#include "kernelopt/device_limits.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace mqx::kernelopt {
namespace {

// The H100 values the launch optimizer is specified against (issue 5).
TEST(DeviceLimits, H100TableEntryHasTheDocumentedLimits) {
  const DeviceLimits &h100 = deviceLimits(Architecture::Sm90);
  EXPECT_EQ(h100.computeCapability, 90);
  EXPECT_EQ(h100.smCount, 132);
  EXPECT_EQ(h100.maxThreadsPerSm, 2048);
  EXPECT_EQ(h100.maxBlocksPerSm, 32);
  EXPECT_EQ(h100.maxWarpsPerSm, 64);
  EXPECT_EQ(h100.registersPerSm, 65536);
  EXPECT_EQ(h100.registerAllocationUnit, 256);
  EXPECT_EQ(h100.sharedMemoryPerSm, 228 * 1024);
  EXPECT_EQ(h100.maxSharedMemoryPerBlock, 227 * 1024);
  EXPECT_EQ(h100.reservedSharedMemoryPerBlock, 1024);
  EXPECT_EQ(h100.sharedMemoryAllocationUnit, 128);
  EXPECT_EQ(h100.warpsPerSm(), 64);
  EXPECT_EQ(h100.maxWarpsPerBlock(), 32);
  // 65536 registers in 4 partitions of 64 units of 256.
  EXPECT_EQ(h100.registerUnitsPerPartition(), 64);
}

TEST(DeviceLimits, EveryKnownArchitectureIsValidAndFoundByComputeCapability) {
  for (Architecture architecture : knownArchitectures()) {
    const DeviceLimits &limits = deviceLimits(architecture);
    SCOPED_TRACE(limits.name);
    EXPECT_NO_THROW(validate(limits));
    EXPECT_EQ(architectureFor(limits.computeCapability), architecture);
    // The reserve is an sm_80+ feature; so is the 128-byte granularity.
    EXPECT_EQ(limits.reservedSharedMemoryPerBlock > 0, limits.computeCapability >= 80);
    EXPECT_EQ(limits.sharedMemoryAllocationUnit, limits.computeCapability >= 80 ? 128 : 256);
  }
  EXPECT_FALSE(architectureFor(61).has_value());
}

TEST(DeviceLimits, ConsumerArchitecturesHaveFewerThreadsAndBlocksPerSm) {
  EXPECT_EQ(deviceLimits(Architecture::Sm75).warpsPerSm(), 32);
  EXPECT_EQ(deviceLimits(Architecture::Sm75).maxBlocksPerSm, 16);
  EXPECT_EQ(deviceLimits(Architecture::Sm86).warpsPerSm(), 48);
  EXPECT_EQ(deviceLimits(Architecture::Sm86).maxBlocksPerSm, 16);
  EXPECT_EQ(deviceLimits(Architecture::Sm89).warpsPerSm(), 48);
  EXPECT_EQ(deviceLimits(Architecture::Sm89).maxBlocksPerSm, 24);
}

DeviceAttributes h100Attributes() {
  DeviceAttributes a;
  a.computeCapabilityMajor = 9;
  a.computeCapabilityMinor = 0;
  a.multiprocessorCount = 132;
  a.warpSize = 32;
  a.maxThreadsPerBlock = 1024;
  a.maxThreadsPerMultiprocessor = 2048;
  a.maxBlocksPerMultiprocessor = 32;
  a.maxRegistersPerMultiprocessor = 65536;
  a.maxRegistersPerBlock = 65536;
  a.maxSharedMemoryPerMultiprocessor = 233472;
  a.maxSharedMemoryPerBlockOptin = 232448;
  a.reservedSharedMemoryPerBlock = 1024;
  return a;
}

TEST(DeviceLimits, FromAttributesReproducesTheTableForAnH100) {
  const DeviceLimits fromDevice = DeviceLimits::fromAttributes(h100Attributes());
  DeviceLimits expected = deviceLimits(Architecture::Sm90);
  expected.name = fromDevice.name;
  EXPECT_EQ(fromDevice.name, "sm_90 (device attributes)");
  EXPECT_EQ(fromDevice.computeCapability, expected.computeCapability);
  EXPECT_EQ(fromDevice.smCount, expected.smCount);
  EXPECT_EQ(fromDevice.maxWarpsPerSm, expected.maxWarpsPerSm);
  EXPECT_EQ(fromDevice.registerPartitions, expected.registerPartitions);
  EXPECT_EQ(fromDevice.registerAllocationUnit, expected.registerAllocationUnit);
  EXPECT_EQ(fromDevice.maxRegistersPerThread, expected.maxRegistersPerThread);
  EXPECT_EQ(fromDevice.sharedMemoryPerSm, expected.sharedMemoryPerSm);
  EXPECT_EQ(fromDevice.maxSharedMemoryPerBlock, expected.maxSharedMemoryPerBlock);
  EXPECT_EQ(fromDevice.sharedMemoryAllocationUnit, expected.sharedMemoryAllocationUnit);
  EXPECT_EQ(fromDevice.reservedSharedMemoryPerBlock, expected.reservedSharedMemoryPerBlock);
}

TEST(DeviceLimits, FromAttributesTakesTheGranularitiesOfTheFamily) {
  DeviceAttributes volta = h100Attributes();
  volta.computeCapabilityMajor = 7;
  volta.maxSharedMemoryPerMultiprocessor = 98304;
  volta.maxSharedMemoryPerBlockOptin = 98304;
  volta.reservedSharedMemoryPerBlock = 0;
  EXPECT_EQ(DeviceLimits::fromAttributes(volta).sharedMemoryAllocationUnit, 256);
}

TEST(DeviceLimits, RejectsAttributesThatCannotDescribeADevice) {
  DeviceAttributes noSms = h100Attributes();
  noSms.multiprocessorCount = 0;
  EXPECT_THROW(DeviceLimits::fromAttributes(noSms), std::invalid_argument);
  DeviceAttributes pascal = h100Attributes();
  pascal.computeCapabilityMajor = 6;
  EXPECT_THROW(DeviceLimits::fromAttributes(pascal), std::invalid_argument);
  DeviceAttributes blockBiggerThanSm = h100Attributes();
  blockBiggerThanSm.maxSharedMemoryPerBlockOptin = 233472;
  EXPECT_THROW(DeviceLimits::fromAttributes(blockBiggerThanSm), std::invalid_argument);
}

} // namespace
} // namespace mqx::kernelopt
