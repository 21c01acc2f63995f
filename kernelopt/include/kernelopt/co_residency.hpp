// Co-residency: whether given blocks of several kernels, with their block
// sizes already fixed, can be resident on one SM at the same time.
//
// The cuda-streams paper (§IV-A) shows that warps, registers and shared
// memory limit concurrent kernels exactly as they limit one kernel, plus the
// SM's block slots. The accounting is the optimizers' (allocation.hpp), so
// "the optimizer's launches fit" and "these blocks fit" agree.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/occupancy.hpp"
#include "kernelopt/resource.hpp"

#include <span>

namespace mqx::kernelopt {

struct ResidentBlocks {
  KernelResources kernel;
  int blocks = 0;
};

// The SM resources the blocks exceed together; empty when they fit. A block
// that breaks a per-block limit exceeds the resource of that limit, and so do
// more warps of one kernel than the register file holds for it alone.
ResourceSet exceededBy(const DeviceLimits &limits, std::span<const ResidentBlocks> resident);

inline bool fitTogether(const DeviceLimits &limits, std::span<const ResidentBlocks> resident) {
  return exceededBy(limits, resident).empty();
}

} // namespace mqx::kernelopt
