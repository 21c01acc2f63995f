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
    const std::size_t n = candidates.size();
    std::vector<std::size_t> byRecency(n);
    std::iota(byRecency.begin(), byRecency.end(), 0);
    std::stable_sort(byRecency.begin(), byRecency.end(),
                     [&](std::size_t a, std::size_t b) { return candidates[a].lastUse < candidates[b].lastUse; });

    std::size_t best = byRecency[0];
    double bestCost = cost(candidates[best], 1, n);
    for (std::size_t rank = 2; rank <= n; ++rank) {
      std::size_t index = byRecency[rank - 1];
      double c = cost(candidates[index], rank, n);
      // Strictly lower only: visiting in LRU order breaks ties towards the
      // less recently used candidate.
      if (c < bestCost) {
        best = index;
        bestCost = c;
      }
    }
    return best;
  }

private:
  double cost(const EvictionCandidate& candidate, std::size_t rank, std::size_t n) const {
    double l = static_cast<double>(rank) / static_cast<double>(n);
    return static_cast<double>(candidate.dirtyBytes) + latencyFactor_ * static_cast<double>(candidate.bytes) * l;
  }

  double latencyFactor_;
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeCdrPolicy(double latencyFactor) {
  return std::make_unique<CdrPolicy>(latencyFactor);
}

} // namespace mqx
