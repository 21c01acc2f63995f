#include "brute_force.hpp"

#include <algorithm>
#include <functional>

namespace mqx::kernelopt::testing {

namespace {

// What one (b, w) choice of one kernel takes from the SM, computed directly
// from the occupancy calculator's rules.
struct Choice {
  int blocks = 0;
  int warps = 0;
  int registerUnits = 0;
  int sharedMemory = 0;
  bool fitsRegisterFile = true; // these warps alone fit the register partitions
};

int divUp(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

std::vector<Choice> choicesOf(const DeviceLimits &l, const KernelDemand &k) {
  std::vector<Choice> choices;
  const long long demand = (k.threads + l.smCount - 1) / l.smCount;
  const int regsPerWarp = divUp(static_cast<long long>(k.registersPerThread) * l.warpSize, l.registerAllocationUnit) *
                          l.registerAllocationUnit;
  const int smemPerBlock =
      divUp(k.sharedMemoryPerBlock + l.reservedSharedMemoryPerBlock, l.sharedMemoryAllocationUnit) *
      l.sharedMemoryAllocationUnit;
  if (k.registersPerThread > l.maxRegistersPerThread)
    return choices;
  if (smemPerBlock > l.maxSharedMemoryPerBlock + l.reservedSharedMemoryPerBlock)
    return choices;
  const int slots = std::min(l.maxWarpsPerSm, l.maxThreadsPerSm / l.warpSize);
  for (int b = 1; b <= l.maxBlocksPerSm; ++b)
    for (int w = 1; w * l.warpSize <= l.maxThreadsPerBlock && w * b <= slots; ++w) {
      if (k.maxThreadsPerBlock > 0 && w * l.warpSize > k.maxThreadsPerBlock)
        continue;
      const long long hardware =
          static_cast<long long>(regsPerWarp) * divUp(w, l.registerPartitions) * l.registerPartitions;
      if (hardware > l.maxRegistersPerBlock || static_cast<long long>(regsPerWarp) * w > l.maxRegistersPerBlock)
        continue;
      if (static_cast<long long>(l.warpSize) * w * b < demand)
        continue;
      const int unitsPerWarp = regsPerWarp / l.registerAllocationUnit;
      const int unitsPerPartition = l.registersPerSm / l.registerPartitions / l.registerAllocationUnit;
      const bool fitsFile = unitsPerWarp == 0 || w * b <= unitsPerPartition / unitsPerWarp * l.registerPartitions;
      choices.push_back({b, w * b, w * b * unitsPerWarp, b * smemPerBlock, fitsFile});
    }
  return choices;
}

} // namespace

BruteForceKernelLevel bruteForceKernelLevel(const DeviceLimits &l, std::span<const KernelDemand> kernels) {
  std::vector<std::vector<Choice>> choices;
  for (const KernelDemand &k : kernels)
    choices.push_back(choicesOf(l, k));
  const int slots = std::min(l.maxWarpsPerSm, l.maxThreadsPerSm / l.warpSize);
  const int registerCapacity = l.registersPerSm / l.registerAllocationUnit;
  BruteForceKernelLevel best;
  std::function<void(std::size_t, Choice)> visit = [&](std::size_t i, Choice sum) {
    if (i == kernels.size()) {
      if (!best.paperModel || sum.sharedMemory < *best.paperModel) {
        best.paperModel = sum.sharedMemory;
        best.registersAtPaperOptimum = sum.registerUnits;
      } else if (sum.sharedMemory == *best.paperModel) {
        best.registersAtPaperOptimum = std::min(*best.registersAtPaperOptimum, sum.registerUnits);
      }
      if (!best.fewestRegisters || sum.registerUnits < *best.fewestRegisters)
        best.fewestRegisters = sum.registerUnits;
      if (sum.fitsRegisterFile && sum.registerUnits <= registerCapacity && sum.sharedMemory <= l.sharedMemoryPerSm &&
          (!best.fullModel || sum.sharedMemory < *best.fullModel))
        best.fullModel = sum.sharedMemory;
      return;
    }
    for (const Choice &c : choices[i]) {
      const Choice next{sum.blocks + c.blocks, sum.warps + c.warps, sum.registerUnits + c.registerUnits,
                        sum.sharedMemory + c.sharedMemory, sum.fitsRegisterFile && c.fitsRegisterFile};
      // Both models share the block and warp limits: pruning on them only
      // skips assignments that are infeasible in both.
      if (next.blocks <= l.maxBlocksPerSm && next.warps <= slots)
        visit(i + 1, next);
    }
  };
  visit(0, {});
  return best;
}

std::optional<std::size_t> bruteForceBatchCount(const DeviceLimits &limits, std::span<const KernelDemand> kernels) {
  const std::size_t n = kernels.size();
  std::vector<int> fits(std::size_t{1} << n, -1); // memo by subset
  auto subsetFits = [&](unsigned mask) {
    if (fits[mask] < 0) {
      std::vector<KernelDemand> subset;
      for (std::size_t i = 0; i < n; ++i)
        if (mask & (1u << i))
          subset.push_back(kernels[i]);
      fits[mask] = bruteForceKernelLevel(limits, subset).fullModel.has_value() ? 1 : 0;
    }
    return fits[mask] == 1;
  };
  for (std::size_t i = 0; i < n; ++i)
    if (!subsetFits(1u << i))
      return std::nullopt;
  // Every set partition as a restricted growth string: kernel i joins one
  // of the blocks so far or opens the next.
  std::vector<unsigned> blocks;
  std::size_t best = n;
  std::function<void(std::size_t)> visit = [&](std::size_t i) {
    if (blocks.size() >= best)
      return;
    if (i == n) {
      for (unsigned mask : blocks)
        if (!subsetFits(mask))
          return;
      best = blocks.size();
      return;
    }
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      blocks[b] |= 1u << i;
      visit(i + 1);
      blocks[b] &= ~(1u << i);
    }
    blocks.push_back(1u << i);
    visit(i + 1);
    blocks.pop_back();
  };
  visit(0);
  return n == 0 ? 0 : best;
}

} // namespace mqx::kernelopt::testing
