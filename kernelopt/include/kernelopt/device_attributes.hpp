// DeviceAttributes: the values a CUDA caller reads off a device with
// cuDeviceGetAttribute, one field per attribute (named in the comments).
// kernelopt never includes cuda.h; the CUDA backend fills this struct and
// passes it to DeviceLimits::fromAttributes.
#pragma once

namespace mqx::kernelopt {

struct DeviceAttributes {
  int computeCapabilityMajor = 0;           // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  int computeCapabilityMinor = 0;           // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  int multiprocessorCount = 0;              // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int warpSize = 0;                         // CU_DEVICE_ATTRIBUTE_WARP_SIZE
  int maxThreadsPerBlock = 0;               // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  int maxThreadsPerMultiprocessor = 0;      // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
  int maxBlocksPerMultiprocessor = 0;       // CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
  int maxRegistersPerMultiprocessor = 0;    // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
  int maxRegistersPerBlock = 0;             // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
  int maxSharedMemoryPerMultiprocessor = 0; // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
  int maxSharedMemoryPerBlockOptin = 0;     // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  int reservedSharedMemoryPerBlock = 0;     // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK

  friend bool operator==(const DeviceAttributes &, const DeviceAttributes &) = default;
};

} // namespace mqx::kernelopt
