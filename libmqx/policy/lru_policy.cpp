// LRU: evict the unit whose last use is oldest.
#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class LruPolicy final : public ReplacementPolicy {
public:
  std::string_view name() const override { return "lru"; }
  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    return leastRecentlyUsed(candidates);
  }
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeLruPolicy() { return std::make_unique<LruPolicy>(); }

} // namespace mqx
