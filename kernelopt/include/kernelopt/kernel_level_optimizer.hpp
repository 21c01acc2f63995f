// The kernel-level optimizer of the knapsack paper ("Kernel-level
// optimization model", Eqs. 11-15, and Algorithm 1): choose for every kernel
// of a batch the blocks per SM b_i and the block size 32 w_i so that all
// kernels are resident at once, minimising the total shared memory
//
//   minimise  sum_i b_i s_i
//   s.t.      sum_i b_i <= B,  sum_i w_i b_i <= W,  32 w_i b_i >= c_i,
//
// with w_i = ceil(c_i / (32 b_i)) (Theorem 1). A solution whose shared memory
// is at most S is a schedule of maximal concurrency (the paper's first remark
// after Eqs. 11-15). The paper drops the register constraint (Eq. 2) from the
// DP; mqx checks it on the DP's solution and, when it fails, solves the same
// recurrence with registers as a third table dimension, so that the answer is
// exact for all four SM resources (docs/kernelopt.md, section 4, "Registers").
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/kernel_demand.hpp"
#include "kernelopt/launch_options.hpp"
#include "kernelopt/resource.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mqx::kernelopt {

// The launch parameters of one kernel.
struct KernelLaunch {
  int threadsPerBlock = 0;     // 32 w_i
  int blocksPerSm = 0;         // b_i
  std::int64_t gridBlocks = 0; // b_i times the SM count: the grid to launch
};

// What a solution takes from one SM.
struct SmUsage {
  int blocks = 0;
  int warps = 0;
  int registerUnits = 0; // register allocation units
  int sharedMemory = 0;  // bytes, after reserve and rounding
};

struct KernelLevelSolution {
  bool feasible = false;
  // When infeasible: the SM capacities that no assignment meets together.
  ResourceSet exceeded;
  // When infeasible because one kernel cannot run on an SM even alone.
  std::optional<std::size_t> unplaceableKernel;
  // One launch per kernel, in input order (empty when infeasible).
  std::vector<KernelLaunch> launches;
  std::vector<LaunchOption> options; // the chosen option of every kernel
  SmUsage usage;
  // True when Algorithm 1's optimum broke the register limit and the
  // register-extended DP produced the answer.
  bool registerExtensionUsed = false;
};

// Reusable: keeps its tables between calls, so one optimizer per thread.
class KernelLevelOptimizer {
public:
  // Throws std::invalid_argument for invalid limits.
  explicit KernelLevelOptimizer(DeviceLimits limits);

  const DeviceLimits &limits() const { return limits_; }

  // The optimal assignment for all four SM resources. Throws
  // std::invalid_argument for an invalid demand.
  KernelLevelSolution solve(std::span<const KernelDemand> kernels);

  // Whether the kernels can all be resident on an SM at once.
  bool fits(std::span<const KernelDemand> kernels) { return solve(kernels).feasible; }

  // Algorithm 1 alone: V[n, B, W] of Eqs. (11)-(15), the least total shared
  // memory of any assignment within the block and warp slots, whether or not
  // it fits S and R; empty when there is none.
  std::optional<int> minimumSharedMemory(std::span<const KernelDemand> kernels);

private:
  bool prepare(std::span<const KernelDemand> kernels, KernelLevelSolution &solution);
  std::optional<int> runTable(bool withRegisters);
  void sizeTable(bool withRegisters);
  bool shiftOf(std::size_t kernel, std::size_t option, int shift[3]) const;
  void relaxLayer(std::size_t layer);
  std::vector<std::size_t> backtrack() const;
  bool registersFit(const std::vector<std::size_t> &choice) const;
  void finish(KernelLevelSolution &solution, const std::vector<std::size_t> &choice) const;

  DeviceLimits limits_;
  // Per call: every kernel's options (flattened), the kernels with more than
  // one option, the slack of each SM resource and the DP table.
  std::vector<LaunchOption> options_;
  std::vector<std::size_t> optionBegin_;
  std::vector<std::size_t> flexible_;
  int fixedSharedMemory_ = 0;
  int slackBlocks_ = 0;
  int slackWarps_ = 0;
  int slackRegisters_ = 0;
  bool narrowestFitRegisterFile_ = true;
  // The DP table V: one layer per flexible kernel plus layer 0, each a box of
  // dims_ cells indexed by the slack used (blocks, warps[, registers]).
  std::vector<std::int32_t> table_;
  bool withRegisters_ = false;
  int registerScale_ = 1;
  int dims_[3] = {0, 0, 0};
};

} // namespace mqx::kernelopt
