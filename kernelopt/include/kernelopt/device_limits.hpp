// DeviceLimits: the per-SM and per-block limits of one GPU, the constants of
// the occupancy model (cuda-streams paper §III-A, Table I) brought up to date
// with the rules of CUDA's occupancy calculator (cuda_occupancy.h).
//
// Values come from the table of known architectures (architectures.hpp) or
// from attributes read off a device (device_attributes.hpp).
#pragma once

#include <string>

namespace mqx::kernelopt {

struct DeviceAttributes;

struct DeviceLimits {
  std::string name;           // e.g. "sm_90 (H100 SXM5)"
  int computeCapability = 0;  // major * 10 + minor, e.g. 90
  int smCount = 0;            // MP in the cuda-streams paper, Eq. (1)
  int warpSize = 32;          // M_TW
  int maxThreadsPerBlock = 0; // 1024 on every supported architecture
  int maxThreadsPerSm = 0;
  int maxBlocksPerSm = 0; // M_BMP; B in the knapsack paper, Eq. (5)
  int maxWarpsPerSm = 0;  // M_WMP; W in the knapsack paper, Eq. (3)
  int registersPerSm = 0; // M_RMP; R in the knapsack paper, Eq. (2)
  int maxRegistersPerBlock = 0;
  int maxRegistersPerThread = 0; // M_RT
  // Registers are allocated per warp, rounded up to this unit (G_RW).
  int registerAllocationUnit = 0;
  // The register file is split into this many sub-partitions, one per warp
  // scheduler; a warp takes its registers from one of them. This is the
  // "warp allocation granularity" G_WMP of the cuda-streams paper, Eq. (6).
  int registerPartitions = 0;
  int sharedMemoryPerSm = 0;            // M_SMP; S in the knapsack paper, Eq. (4)
  int maxSharedMemoryPerBlock = 0;      // the opt-in maximum a kernel may request
  int sharedMemoryAllocationUnit = 0;   // G_SB
  int reservedSharedMemoryPerBlock = 0; // taken by the driver from every block on sm_80+

  // Warp slots of one SM: the smaller of the warp limit and the thread limit.
  int warpsPerSm() const;
  // Largest block in warps (32 on every supported architecture).
  int maxWarpsPerBlock() const;
  // Registers of one sub-partition, in allocation units: what one kernel's
  // warps are counted against (cuda-streams paper, Eq. 6).
  int registerUnitsPerPartition() const;
  // Registers of the SM in allocation units: what the warps of all resident
  // kernels together are counted against (knapsack paper, Eq. 2).
  int registerUnitsPerSm() const;

  // Limits of a device from the attributes a CUDA caller read off it. The
  // allocation granularities, which no attribute reports, come from the
  // architecture family. Throws std::invalid_argument for values that cannot
  // describe a device or for architectures older than sm_70.
  static DeviceLimits fromAttributes(const DeviceAttributes &attributes);
};

// Throws std::invalid_argument naming the first field that cannot describe a
// device (zero, negative or inconsistent). The optimizers call it once.
void validate(const DeviceLimits &limits);

} // namespace mqx::kernelopt
