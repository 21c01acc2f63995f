// The launch options of one kernel on one SM: how many blocks b_i and warps
// per block w_i to run its per-SM thread demand c_i with.
//
// Knapsack paper, Theorem 1: for a fixed b_i the best w_i is
// ceil(c_i / (32 b_i)), so a kernel's options are indexed by b_i alone. Of
// those, only the Pareto-efficient ones matter to the optimizers: more blocks
// always cost more block slots and shared memory (b_i s_i), so a larger b_i is
// worth considering only if it needs strictly fewer warps b_i w_i (the
// rounding of w_i can waste up to one warp per block). Every pruned option is
// dominated in all four resources, so pruning never changes an optimum.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/kernel_demand.hpp"
#include "kernelopt/resource.hpp"

#include <vector>

namespace mqx::kernelopt {

struct LaunchOption {
  int blocksPerSm = 0;   // b_i
  int warpsPerBlock = 0; // w_i = ceil(c_i / (32 b_i)), Theorem 1
  int warps = 0;         // b_i w_i: the kernel's warp slots, Eq. (13)
  // Register allocation units of the kernel's warps: its share of the
  // register constraint, Eq. (2) (allocation.hpp).
  int registerUnits = 0;
  // Whether the register file holds this many warps of the kernel at all
  // (the single-kernel limit delta of the cuda-streams paper, Eq. 6).
  bool fitsRegisterFile = true;
  // b_i s_i with s_i after the reserve and rounding: Eqs. (4) and (11).
  int sharedMemory = 0;
};

struct LaunchOptions {
  // Increasing blocks, strictly decreasing warps. Only the block and warp
  // slots of one SM bound them (the model of Eqs. 11-15); shared memory and
  // registers are left to the optimizers.
  std::vector<LaunchOption> options;
  // Why there is no option at all: the per-block limits (registers per
  // thread or block, shared memory per block) or a demand beyond the SM's
  // warp or block slots.
  ResourceSet obstacles;
};

LaunchOptions launchOptions(const DeviceLimits &limits, const KernelDemand &kernel);

// The same, appending the options to `out` (no allocation when it has room);
// returns the obstacles.
ResourceSet appendLaunchOptions(const DeviceLimits &limits, const KernelDemand &kernel, std::vector<LaunchOption> &out);

// The option for a given block count (Theorem 1), whether or not it is
// Pareto-efficient; blocksPerSm == 0 when b blocks cannot hold the demand.
LaunchOption launchOptionFor(const DeviceLimits &limits, const KernelDemand &kernel, int blocksPerSm);

} // namespace mqx::kernelopt
