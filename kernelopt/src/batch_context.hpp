// Internal to the batch-level optimizer: the kernels of one planning call and
// the feasibility test every batching algorithm shares.
#pragma once

#include "kernelopt/batch_optimizer.hpp"

#include <map>
#include <vector>

namespace mqx::kernelopt::detail {

// A kernel's cheapest use of every SM resource over its launch options; a
// batch can only fit if these sums fit (a necessary test, no DP needed).
struct Footprint {
  int blocks = 0;
  int warps = 0;
  int registerUnits = 0;
  int sharedMemory = 0;
};

// Kernels are addressed by "item", their position among the placeable ones.
class BatchContext {
public:
  BatchContext(KernelLevelOptimizer &solver, std::span<const KernelDemand> kernels);

  std::size_t size() const { return placeable_.size(); }
  const std::vector<std::size_t> &unplaceable() const { return unplaceable_; }

  // Whether the items (in any order) fit on an SM together; memoised unless
  // the caller keeps its own table.
  bool fits(std::vector<std::size_t> items, bool memoise = true);
  // The largest fraction of any SM resource the item's footprint takes: the
  // "size" first-fit decreasing sorts by.
  double size(std::size_t item) const;
  // ceil(sum of footprints / capacity) over the four resources.
  std::size_t resourceLowerBound() const;

  // Solves every batch with the kernel-level optimizer and maps items back
  // to input indices.
  BatchPlan makePlan(const std::vector<std::vector<std::size_t>> &batches, BatchMethod method, std::size_t lowerBound);

private:
  bool footprintsFit(const std::vector<std::size_t> &items) const;

  KernelLevelOptimizer &solver_;
  std::span<const KernelDemand> kernels_;
  std::vector<std::size_t> placeable_;
  std::vector<std::size_t> unplaceable_;
  std::vector<Footprint> footprints_;
  std::vector<KernelDemand> scratch_;
  std::map<std::vector<std::size_t>, bool> memo_;
};

// First-fit decreasing: items by decreasing size, each into the first batch
// it fits, else a new one.
std::vector<std::vector<std::size_t>> firstFitDecreasing(BatchContext &context);

BatchPlan planExact(BatchContext &context);
BatchPlan planColumnGeneration(BatchContext &context, const BatchOptions &options);

} // namespace mqx::kernelopt::detail
