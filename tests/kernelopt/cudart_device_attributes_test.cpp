// deviceAttributesOf: each cudaDeviceProp field lands in its DeviceAttributes
// field (distinct values, so that a swapped pair shows).
#include <gtest/gtest.h>

#include "kernelopt/cudart_device_attributes.hpp"

namespace mqx::kernelopt {
namespace {

TEST(CudartDeviceAttributes, EveryPropertyLandsInItsField) {
  cudaDeviceProp properties{};
  properties.major = 9;
  properties.minor = 1;
  properties.multiProcessorCount = 132;
  properties.warpSize = 32;
  properties.maxThreadsPerBlock = 1024;
  properties.maxThreadsPerMultiProcessor = 2048;
  properties.maxBlocksPerMultiProcessor = 24;
  properties.regsPerMultiprocessor = 65536;
  properties.regsPerBlock = 32768;
  properties.sharedMemPerMultiprocessor = 233472;
  properties.sharedMemPerBlockOptin = 232448;
  properties.reservedSharedMemPerBlock = 1024 + 1;
  const DeviceAttributes expected{.computeCapabilityMajor = 9,
                                  .computeCapabilityMinor = 1,
                                  .multiprocessorCount = 132,
                                  .warpSize = 32,
                                  .maxThreadsPerBlock = 1024,
                                  .maxThreadsPerMultiprocessor = 2048,
                                  .maxBlocksPerMultiprocessor = 24,
                                  .maxRegistersPerMultiprocessor = 65536,
                                  .maxRegistersPerBlock = 32768,
                                  .maxSharedMemoryPerMultiprocessor = 233472,
                                  .maxSharedMemoryPerBlockOptin = 232448,
                                  .reservedSharedMemoryPerBlock = 1025};
  EXPECT_TRUE(deviceAttributesOf(properties) == expected);
}

} // namespace
} // namespace mqx::kernelopt
