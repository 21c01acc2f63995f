// The batch-level optimizer of the knapsack paper ("Batch-level optimization
// kernel for a more general situation", Eqs. 16-22, and "Algorithm of
// Batch-optimization model", Eqs. 23-30): when the kernels do not all fit on
// an SM at once, group them into the fewest batches that each do, and solve
// every batch with the kernel-level optimizer.
//
// A set of kernels "fits" when the kernel-level optimizer finds an assignment
// within all four SM resources. That test is exact, so it is monotone (every
// subset of a batch fits), and it replaces the paper's fixed per-kernel sizes
// w_i, r_i, s_i: a kernel's size depends on the b_i chosen with its partners.
//
//   - Exact (small instances): the least number of batches over all set
//     partitions, by dynamic programming over subsets.
//   - Column generation (larger ones): the paper's Algorithm 2. The master LP
//     (packing_lp.hpp) prices the kernels; the pricing problem (Eq. 26),
//     "find a batch whose prices sum above 1", is solved by branch and bound
//     with the kernel-level optimizer as the feasibility test; the columns are
//     rounded to batches greedily and compared with first-fit decreasing.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/kernel_demand.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace mqx::kernelopt {

struct Batch {
  std::vector<std::size_t> kernels; // indices into the input, increasing
  KernelLevelSolution solution;     // launches in the order of `kernels`
};

enum class BatchMethod { Exact, ColumnGeneration };

struct BatchPlan {
  // Batches, ordered by their first kernel.
  std::vector<Batch> batches;
  // Kernels that cannot run on an SM even alone (a demand beyond the SM's
  // capacity): the launch optimizer leaves their launch parameters alone and
  // they run on their own.
  std::vector<std::size_t> unplaceable;
  BatchMethod method = BatchMethod::Exact;
  // A lower bound on the number of batches (the resource bound, or the LP
  // bound when column generation proved it); equal to batches.size() when
  // the plan is proven optimal.
  std::size_t lowerBound = 0;
  bool provenOptimal = false;
};

struct BatchOptions {
  // plan() solves instances of at most this many placeable kernels exactly
  // (the subset DP takes about 3^n / 2 steps).
  std::size_t exactLimit = 12;
  int maxColumnGenerationRounds = 100;
  // Search nodes per pricing problem; past it the pricing is a heuristic and
  // the LP bound is not claimed.
  std::size_t pricingNodeLimit = 20000;
};

class BatchOptimizer {
public:
  // Throws std::invalid_argument for invalid limits.
  explicit BatchOptimizer(DeviceLimits limits, BatchOptions options = {});

  // Exact for small instances, column generation otherwise.
  BatchPlan plan(std::span<const KernelDemand> kernels);
  // Throws std::invalid_argument beyond 24 placeable kernels.
  BatchPlan planExact(std::span<const KernelDemand> kernels);
  BatchPlan planColumnGeneration(std::span<const KernelDemand> kernels);

private:
  KernelLevelOptimizer solver_;
  BatchOptions options_;
};

} // namespace mqx::kernelopt
