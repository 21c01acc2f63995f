#include "policy/replacement_policy.hpp"

namespace mqx {

std::size_t leastRecentlyUsed(std::span<const EvictionCandidate> candidates) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].lastUse < candidates[best].lastUse) best = i;
  return best;
}

std::size_t lowestCost(std::span<const EvictionCandidate> candidates, std::span<const std::size_t> order,
                       double latencyFactor) {
  const double n = static_cast<double>(order.size());
  auto cost = [&](std::size_t rank) {
    const EvictionCandidate& candidate = candidates[order[rank - 1]];
    return static_cast<double>(candidate.dirtyBytes) +
           latencyFactor * static_cast<double>(candidate.bytes) * (static_cast<double>(rank) / n);
  };
  std::size_t best = 1;
  double bestCost = cost(1);
  for (std::size_t rank = 2; rank <= order.size(); ++rank)
    if (const double c = cost(rank); c < bestCost) { // strictly: ties to the earlier rank
      best = rank;
      bestCost = c;
    }
  return order[best - 1];
}

std::unique_ptr<ReplacementPolicy> makeReplacementPolicy(const PolicyOptions& options) {
  switch (options.replacement) {
  case ReplacementKind::Cdr: return makeCdrPolicy(options.latencyFactor);
  case ReplacementKind::Lru: return makeLruPolicy();
  case ReplacementKind::Mru: return makeMruPolicy();
  case ReplacementKind::Lfu: return makeLfuPolicy();
  case ReplacementKind::Random: return makeRandomPolicy(options.randomSeed);
  case ReplacementKind::Adaptive: return makeScanResistantPolicy(makeCdrPolicy(options.latencyFactor));
  case ReplacementKind::Reuse: return makeReusePolicy(options.latencyFactor);
  }
  return makeCdrPolicy(options.latencyFactor);
}

} // namespace mqx
