#include "policy/replacement_policy.hpp"

namespace mqx {

std::size_t leastRecentlyUsed(std::span<const EvictionCandidate> candidates) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].lastUse < candidates[best].lastUse) best = i;
  return best;
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
