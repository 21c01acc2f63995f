#include "kernelopt/batch_optimizer.hpp"

#include "batch_context.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace mqx::kernelopt {

namespace detail {

BatchContext::BatchContext(KernelLevelOptimizer &solver, std::span<const KernelDemand> kernels)
    : solver_(solver), kernels_(kernels) {
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const LaunchOptions options = launchOptions(solver.limits(), kernels[i]);
    // A kernel whose cheapest footprint already breaks an SM capacity, or
    // that has no option at all, fits no batch.
    if (options.options.empty() || !solver_.fits(kernels.subspan(i, 1))) {
      unplaceable_.push_back(i);
      continue;
    }
    placeable_.push_back(i);
    footprints_.push_back({options.options.front().blocksPerSm, options.options.back().warps,
                           options.options.back().registerUnits, options.options.front().sharedMemory});
  }
}

bool BatchContext::footprintsFit(const std::vector<std::size_t> &items) const {
  Footprint sum;
  for (std::size_t item : items) {
    sum.blocks += footprints_[item].blocks;
    sum.warps += footprints_[item].warps;
    sum.registerUnits += footprints_[item].registerUnits;
    sum.sharedMemory += footprints_[item].sharedMemory;
  }
  const DeviceLimits &limits = solver_.limits();
  return sum.blocks <= limits.maxBlocksPerSm && sum.warps <= limits.warpsPerSm() &&
         sum.registerUnits <= limits.registerUnitsPerSm() && sum.sharedMemory <= limits.sharedMemoryPerSm;
}

bool BatchContext::fits(std::vector<std::size_t> items, bool memoise) {
  if (items.size() <= 1)
    return true;
  if (!footprintsFit(items))
    return false;
  std::sort(items.begin(), items.end());
  if (memoise)
    if (auto found = memo_.find(items); found != memo_.end())
      return found->second;
  scratch_.clear();
  for (std::size_t item : items)
    scratch_.push_back(kernels_[placeable_[item]]);
  const bool result = solver_.fits(scratch_);
  if (memoise)
    memo_.emplace(std::move(items), result);
  return result;
}

double BatchContext::size(std::size_t item) const {
  const DeviceLimits &limits = solver_.limits();
  const Footprint &f = footprints_[item];
  return std::max({static_cast<double>(f.blocks) / limits.maxBlocksPerSm,
                   static_cast<double>(f.warps) / limits.warpsPerSm(),
                   static_cast<double>(f.registerUnits) / limits.registerUnitsPerSm(),
                   static_cast<double>(f.sharedMemory) / limits.sharedMemoryPerSm});
}

std::size_t BatchContext::resourceLowerBound() const {
  if (placeable_.empty())
    return 0;
  const DeviceLimits &limits = solver_.limits();
  long long blocks = 0, warps = 0, registers = 0, shared = 0;
  for (const Footprint &f : footprints_) {
    blocks += f.blocks;
    warps += f.warps;
    registers += f.registerUnits;
    shared += f.sharedMemory;
  }
  auto bound = [](long long total, long long capacity) { return (total + capacity - 1) / capacity; };
  return static_cast<std::size_t>(
      std::max({bound(blocks, limits.maxBlocksPerSm), bound(warps, limits.warpsPerSm()),
                bound(registers, limits.registerUnitsPerSm()), bound(shared, limits.sharedMemoryPerSm), 1LL}));
}

BatchPlan BatchContext::makePlan(const std::vector<std::vector<std::size_t>> &batches, BatchMethod method,
                                 std::size_t lowerBound) {
  BatchPlan plan;
  plan.method = method;
  plan.unplaceable = unplaceable_;
  for (const auto &items : batches) {
    Batch batch;
    for (std::size_t item : items)
      batch.kernels.push_back(placeable_[item]);
    std::sort(batch.kernels.begin(), batch.kernels.end());
    scratch_.clear();
    for (std::size_t kernel : batch.kernels)
      scratch_.push_back(kernels_[kernel]);
    batch.solution = solver_.solve(scratch_);
    plan.batches.push_back(std::move(batch));
  }
  std::sort(plan.batches.begin(), plan.batches.end(),
            [](const Batch &a, const Batch &b) { return a.kernels.front() < b.kernels.front(); });
  plan.lowerBound = std::max(lowerBound, resourceLowerBound());
  plan.provenOptimal = plan.batches.size() == plan.lowerBound;
  return plan;
}

std::vector<std::vector<std::size_t>> firstFitDecreasing(BatchContext &context) {
  std::vector<std::size_t> order(context.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return context.size(a) > context.size(b); });
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t item : order) {
    bool placed = false;
    for (auto &batch : batches) {
      batch.push_back(item);
      if (context.fits(batch)) {
        placed = true;
        break;
      }
      batch.pop_back();
    }
    if (!placed)
      batches.push_back({item});
  }
  return batches;
}

} // namespace detail

BatchOptimizer::BatchOptimizer(DeviceLimits limits, BatchOptions options)
    : solver_(std::move(limits)), options_(options) {}

BatchPlan BatchOptimizer::plan(std::span<const KernelDemand> kernels) {
  detail::BatchContext context(solver_, kernels);
  if (context.size() <= options_.exactLimit)
    return detail::planExact(context);
  return detail::planColumnGeneration(context, options_);
}

BatchPlan BatchOptimizer::planExact(std::span<const KernelDemand> kernels) {
  detail::BatchContext context(solver_, kernels);
  return detail::planExact(context);
}

BatchPlan BatchOptimizer::planColumnGeneration(std::span<const KernelDemand> kernels) {
  detail::BatchContext context(solver_, kernels);
  return detail::planColumnGeneration(context, options_);
}

} // namespace mqx::kernelopt
