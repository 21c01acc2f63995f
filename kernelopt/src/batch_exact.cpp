// The exact batch-level solver for small instances: the fewest batches over
// all partitions of the kernels into sets that fit an SM (Eqs. 16-22 solved
// to optimality), by dynamic programming over subsets.
#include "batch_context.hpp"

#include <bit>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace mqx::kernelopt::detail {

namespace {

constexpr std::size_t kMaxExactItems = 24;

std::vector<std::size_t> itemsOf(std::uint32_t mask) {
  std::vector<std::size_t> items;
  for (std::uint32_t rest = mask; rest != 0; rest &= rest - 1)
    items.push_back(std::countr_zero(rest));
  return items;
}

// fits[mask] for every subset. Fitting is monotone (the kernel-level test is
// exact), so a set with a non-fitting subset of one kernel less is rejected
// without running the DP.
std::vector<bool> fittingSubsets(BatchContext &context) {
  const std::uint32_t count = std::uint32_t{1} << context.size();
  std::vector<bool> fits(count, false);
  fits[0] = true;
  for (std::uint32_t mask = 1; mask < count; ++mask) {
    bool candidate = true;
    for (std::uint32_t rest = mask; rest != 0 && candidate; rest &= rest - 1)
      candidate = fits[mask & ~(rest & (~rest + 1))];
    fits[mask] = candidate && context.fits(itemsOf(mask), false);
  }
  return fits;
}

// batches[mask] = 1 + min over fitting sets s that hold the lowest item of
// mask of batches[mask \ s]; fixing the lowest item avoids counting every
// partition once per order of its sets.
std::vector<std::vector<std::size_t>> fewestBatches(std::size_t items, const std::vector<bool> &fits) {
  const std::uint32_t count = std::uint32_t{1} << items;
  constexpr std::uint8_t kUnset = std::numeric_limits<std::uint8_t>::max();
  std::vector<std::uint8_t> batches(count, kUnset);
  std::vector<std::uint32_t> firstSet(count, 0);
  batches[0] = 0;
  for (std::uint32_t mask = 1; mask < count; ++mask) {
    const std::uint32_t lowest = mask & (~mask + 1);
    const std::uint32_t rest = mask ^ lowest;
    for (std::uint32_t sub = rest;; sub = (sub - 1) & rest) {
      const std::uint32_t set = sub | lowest;
      if (fits[set] && batches[mask ^ set] + 1 < batches[mask]) {
        batches[mask] = static_cast<std::uint8_t>(batches[mask ^ set] + 1);
        firstSet[mask] = set;
      }
      if (sub == 0)
        break;
    }
  }
  std::vector<std::vector<std::size_t>> partition;
  for (std::uint32_t mask = count - 1; mask != 0; mask ^= firstSet[mask])
    partition.push_back(itemsOf(firstSet[mask]));
  return partition;
}

} // namespace

BatchPlan planExact(BatchContext &context) {
  if (context.size() > kMaxExactItems)
    throw std::invalid_argument("kernelopt: the exact batch solver takes at most 24 placeable kernels");
  if (context.size() == 0)
    return context.makePlan({}, BatchMethod::Exact, 0);
  const auto partition = fewestBatches(context.size(), fittingSubsets(context));
  BatchPlan plan = context.makePlan(partition, BatchMethod::Exact, partition.size());
  plan.provenOptimal = true;
  return plan;
}

} // namespace mqx::kernelopt::detail
