#include "kernelopt/cudart_device_attributes.hpp"

namespace mqx::kernelopt {

DeviceAttributes deviceAttributesOf(const cudaDeviceProp &properties) {
  DeviceAttributes attributes;
  attributes.computeCapabilityMajor = properties.major;
  attributes.computeCapabilityMinor = properties.minor;
  attributes.multiprocessorCount = properties.multiProcessorCount;
  attributes.warpSize = properties.warpSize;
  attributes.maxThreadsPerBlock = properties.maxThreadsPerBlock;
  attributes.maxThreadsPerMultiprocessor = properties.maxThreadsPerMultiProcessor;
  attributes.maxBlocksPerMultiprocessor = properties.maxBlocksPerMultiProcessor;
  attributes.maxRegistersPerMultiprocessor = properties.regsPerMultiprocessor;
  attributes.maxRegistersPerBlock = properties.regsPerBlock;
  // Shared memory sizes fit an int: a few hundred KiB per SM.
  attributes.maxSharedMemoryPerMultiprocessor = static_cast<int>(properties.sharedMemPerMultiprocessor);
  attributes.maxSharedMemoryPerBlockOptin = static_cast<int>(properties.sharedMemPerBlockOptin);
  attributes.reservedSharedMemoryPerBlock = static_cast<int>(properties.reservedSharedMemPerBlock);
  return attributes;
}

} // namespace mqx::kernelopt
