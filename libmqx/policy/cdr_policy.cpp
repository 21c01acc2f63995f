// CDR, cost-driven replacement (paper §4.2, Formula 1): evict the unit with
// the lowest c = e + f·s·l, where e is the data that must be written back,
// s the size, l the position in LRU order (1/n for the least recently used
// of n candidates, up to 1), f the latency factor. A clean unit costs only
// the reuse term, so CDR prefers clean data and small, cold units. Ties go to
// the less recently used unit.
#include <algorithm>
#include <numeric>
#include <vector>

#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class CdrPolicy final : public ReplacementPolicy {
public:
  explicit CdrPolicy(double latencyFactor) : latencyFactor_(latencyFactor) {}
  std::string_view name() const override { return "cdr"; }

  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    // Visiting in LRU order breaks ties towards the less recently used.
    byRecency_.resize(candidates.size());
    std::iota(byRecency_.begin(), byRecency_.end(), 0);
    std::stable_sort(byRecency_.begin(), byRecency_.end(),
                     [&](std::size_t a, std::size_t b) { return candidates[a].lastUse < candidates[b].lastUse; });
    return lowestCost(candidates, byRecency_, latencyFactor_);
  }

private:
  double latencyFactor_;
  std::vector<std::size_t> byRecency_; // reused between choices
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeCdrPolicy(double latencyFactor) {
  return std::make_unique<CdrPolicy>(latencyFactor);
}

} // namespace mqx
