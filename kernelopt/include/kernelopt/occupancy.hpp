// The occupancy model of one kernel running alone: how many of its blocks an
// SM holds at once and which resource limits that number.
//
// cuda-streams paper §III-A: beta = min(beta_W, beta_R, beta_S) (Eq. 2), with
// the shared-memory (Eq. 3), register (Eqs. 5-7) and warp (Eq. 8) limits, and
// the block limit M_BMP folded into beta_W. The rules are those of
// cuOccupancyMaxActiveBlocksPerMultiprocessor / cuda_occupancy.h for the
// default shared-memory carveout; the reported limiting factors are all that
// tie for the minimum, as in cudaOccResult::limitingFactors.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/resource.hpp"

#include <cstdint>
#include <optional>

namespace mqx::kernelopt {

// What the compiler and the launch fix for a kernel.
struct KernelResources {
  int registersPerThread = 0;   // as reported by ptxas / CU_FUNC_ATTRIBUTE_NUM_REGS
  int sharedMemoryPerBlock = 0; // static plus dynamic bytes, without the driver's reserve
  int threadsPerBlock = 0;
};

struct Occupancy {
  int activeBlocksPerSm = 0; // beta
  ResourceSet limitingFactors;
  // The limit each resource alone imposes (beta_W, beta_R, beta_S and the
  // block slots). A resource that imposes none reports INT_MAX.
  int blockLimitWarps = 0;
  int blockLimitRegisters = 0;
  int blockLimitSharedMemory = 0;
  int blockLimitBlocks = 0;
  int warpsPerBlock = 0;                 // gamma, Eq. (4)
  int allocatedRegistersPerBlock = 0;    // after per-warp rounding
  int allocatedSharedMemoryPerBlock = 0; // after the reserve and rounding

  int activeWarpsPerSm() const { return activeBlocksPerSm * warpsPerBlock; }
  // Eq. (9): active threads over the SM's thread capacity.
  double fraction(const DeviceLimits &limits) const;
};

// Throws std::invalid_argument for a non-positive block size or negative
// registers or shared memory, and for invalid limits.
Occupancy computeOccupancy(const DeviceLimits &limits, const KernelResources &kernel);

// Eq. (1): the rounds in which `blocks` blocks of the kernel run on the whole
// GPU, ceil(T * B / (alpha * MP)) with alpha = beta * T. Empty when no block
// fits an SM.
std::optional<std::int64_t> runningRounds(const DeviceLimits &limits, const Occupancy &occupancy, std::int64_t blocks);

} // namespace mqx::kernelopt
