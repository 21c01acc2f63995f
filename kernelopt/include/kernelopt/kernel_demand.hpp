// KernelDemand: what the launch optimizer knows about one resizable kernel
// (docs/architecture.md decision 11: only kernels declared resizable, i.e. written
// with grid-stride loops, get a new grid and block size).
//
// Knapsack paper, Eqs. (1)-(8): c_i threads, r_i registers per thread and s_i
// bytes of shared memory per block. As in the paper, s_i does not change with
// the block size (it is sized for a chunk of input, "Overview of our approach").
#pragma once

#include "kernelopt/device_limits.hpp"

#include <cstdint>

namespace mqx::kernelopt {

struct KernelDemand {
  // Threads the kernel should have resident across the whole GPU at once.
  std::int64_t threads = 0;
  int registersPerThread = 0;
  // Static plus dynamic bytes per block, without the driver's reserve.
  int sharedMemoryPerBlock = 0;
  // The kernel's own block size limit (__launch_bounds__ or
  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK); 0 means the device's limit.
  int maxThreadsPerBlock = 0;
};

// c_i of the per-SM model: the kernel's threads divided over the SMs, rounded
// up. The CUDA scheduler spreads a kernel's blocks over as many SMs as it can
// (cuda-streams paper §IV-B, first discipline), so the knapsack paper solves
// for one SM and multiplies the blocks back by the SM count.
std::int64_t threadsPerSm(const DeviceLimits &limits, const KernelDemand &kernel);

// Throws std::invalid_argument for a demand that cannot describe a kernel.
void validate(const KernelDemand &kernel);

} // namespace mqx::kernelopt
