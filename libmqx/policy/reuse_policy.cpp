// Reuse: CDR's cost (paper §4.2, Formula 1: c = e + f·s·l) with the reuse
// term l ranked by each unit's predicted next use instead of its last use.
// The prediction is the simplest that sees a pattern: the last use plus the
// last reuse interval (lastUse - previousUse); a unit used once takes the
// mean interval of the others. The unit predicted to come back last has
// l = 1/n, as LRU's victim has in CDR.
//
// Why not recency (docs/results.md, "The reuse policy"): on a cyclic pass
// over more units than fit (a training step's layers, a streaming scan)
// every recency order evicts exactly the unit needed next, and after a pass
// of random reuse a scan in address order (a checksum, a checkpoint) evicts
// the units it has yet to read. A unit's last interval predicts both: on a
// cycle every interval is the cycle's length, so the most recently used unit
// is the one due last (MRU, as the adaptive policy switches to, without its
// switching); a unit just read by a scan waited longer than the ones still
// to come. On a hot set, hot units have short intervals and stay.
#include <algorithm>
#include <numeric>
#include <vector>

#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class ReusePolicy final : public ReplacementPolicy {
public:
  explicit ReusePolicy(double latencyFactor) : latencyFactor_(latencyFactor) {}
  std::string_view name() const override { return "reuse"; }

  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    const std::size_t n = candidates.size();
    const double unknownInterval = meanInterval(candidates);
    predicted_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const EvictionCandidate& candidate = candidates[i];
      predicted_[i] =
          static_cast<double>(candidate.lastUse) +
          (knowsInterval(candidate) ? static_cast<double>(candidate.lastUse - candidate.previousUse) : unknownInterval);
    }
    // Due last first; among units due together, the less recently used.
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      if (predicted_[a] != predicted_[b]) return predicted_[a] > predicted_[b];
      return candidates[a].lastUse < candidates[b].lastUse;
    });
    return lowestCost(candidates, order_, latencyFactor_);
  }

private:
  static bool knowsInterval(const EvictionCandidate& candidate) {
    return candidate.previousUse != 0 && candidate.previousUse < candidate.lastUse;
  }

  static double meanInterval(std::span<const EvictionCandidate> candidates) {
    double sum = 0;
    std::size_t known = 0;
    for (const EvictionCandidate& candidate : candidates)
      if (knowsInterval(candidate)) {
        sum += static_cast<double>(candidate.lastUse - candidate.previousUse);
        ++known;
      }
    return known == 0 ? 0.0 : sum / static_cast<double>(known);
  }

  double latencyFactor_;
  std::vector<double> predicted_; // per candidate, reused between choices
  std::vector<std::size_t> order_;
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeReusePolicy(double latencyFactor) {
  return std::make_unique<ReusePolicy>(latencyFactor);
}

} // namespace mqx
