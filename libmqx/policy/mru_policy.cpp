// MRU: evict the most recently used unit (good for cyclic scans larger than
// the device, one of the paper's baselines in §7.4).
#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class MruPolicy final : public ReplacementPolicy {
public:
  std::string_view name() const override { return "mru"; }
  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < candidates.size(); ++i)
      if (candidates[i].lastUse > candidates[best].lastUse) best = i;
    return best;
  }
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeMruPolicy() { return std::make_unique<MruPolicy>(); }

} // namespace mqx
