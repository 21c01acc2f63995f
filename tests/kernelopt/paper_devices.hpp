// Devices and kernels of the papers' experiments, for tests that reproduce
// their numbers.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/occupancy.hpp"

namespace mqx::kernelopt::testing {

// The GTX 680 (compute capability 3.0) of the cuda-streams paper, Table I.
// Two entries of the table are rounded there: M_RMP is printed as 65535
// (GK104 has 65536 registers per SM, and §IV-A counts "65536 registers" for
// one block of C and five of D), and M_RT as 64 (sm_30 allows 63).
inline DeviceLimits gtx680() {
  DeviceLimits l;
  l.name = "GTX 680 (cuda-streams paper, Table I)";
  l.computeCapability = 30;
  l.smCount = 8;
  l.warpSize = 32; // M_TW
  l.maxThreadsPerBlock = 1024;
  l.maxThreadsPerSm = 2048;
  l.maxBlocksPerSm = 16;    // M_BMP
  l.maxWarpsPerSm = 64;     // M_WMP
  l.registersPerSm = 65536; // M_RMP
  l.maxRegistersPerBlock = 65536;
  l.maxRegistersPerThread = 63;   // M_RT
  l.registerAllocationUnit = 256; // G_RW
  l.registerPartitions = 4;       // G_WMP
  l.sharedMemoryPerSm = 49152;    // M_SMP
  l.maxSharedMemoryPerBlock = 49152;
  l.sharedMemoryAllocationUnit = 256; // G_SB
  l.reservedSharedMemoryPerBlock = 0;
  return l;
}

// The synthetic kernels A to F of the cuda-streams paper, Table III
// (registers per thread as the compiler reports them; shared memory; threads
// per block).
constexpr KernelResources kKernelA{11, 0, 1024};
constexpr KernelResources kKernelB{33, 0, 1024};
constexpr KernelResources kKernelC{11, 0, 256};
constexpr KernelResources kKernelD{44, 0, 256};
constexpr KernelResources kKernelE{11, 24576, 256};
constexpr KernelResources kKernelF{44, 24576, 256};

} // namespace mqx::kernelopt::testing
