// Reference solvers for the tests, written from the papers' formulations and
// independent of the library's code paths: they enumerate every (b_i, w_i)
// and every set partition instead of using Theorem 1, Pareto pruning or the
// DP.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/kernel_demand.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace mqx::kernelopt::testing {

struct BruteForceKernelLevel {
  // min sum b_i s_i subject to the block and warp slots and the demands
  // (Eqs. 11-15, any w_i with 32 w_i b_i >= c_i): Algorithm 1's V[n, B, W].
  std::optional<int> paperModel;
  // The same subject also to shared memory S and register units R.
  std::optional<int> fullModel;
  // Register units of the SM: the fewest among the assignments
  // that reach paperModel, and the fewest among all assignments within the
  // block and warp slots. Tests use them to build instances where the
  // register limit makes Algorithm 1's optimum infeasible.
  std::optional<int> registersAtPaperOptimum;
  std::optional<int> fewestRegisters;
};

BruteForceKernelLevel bruteForceKernelLevel(const DeviceLimits &limits, std::span<const KernelDemand> kernels);

// The fewest batches over every set partition of the kernels into sets that
// fit (by bruteForceKernelLevel's full model); empty when some kernel does not
// fit alone.
std::optional<std::size_t> bruteForceBatchCount(const DeviceLimits &limits, std::span<const KernelDemand> kernels);

} // namespace mqx::kernelopt::testing
