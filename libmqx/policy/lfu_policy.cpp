// LFU: evict the unit used by the fewest launches; ties go to the less
// recently used.
#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class LfuPolicy final : public ReplacementPolicy {
public:
  std::string_view name() const override { return "lfu"; }
  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      const auto& b = candidates[best];
      if (c.useCount < b.useCount || (c.useCount == b.useCount && c.lastUse < b.lastUse)) best = i;
    }
    return best;
  }
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeLfuPolicy() { return std::make_unique<LfuPolicy>(); }

} // namespace mqx
