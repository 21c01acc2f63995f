// Adaptive: CDR (or another base policy), switching to MRU while the
// references form a scan larger than the device. A cyclic scan over more
// units than fit makes any recency order evict exactly the unit needed next:
// LRU and CDR (whose reuse term is LRU order) reload everything on every
// pass, where evicting the most recently used keeps most of the cycle
// resident (bench/results/peers-cuda-policy-*-H100-9451e0a.json: MRU moved
// 5x fewer bytes on the scan, and 1.6x more on a hot-set reuse). The paper's
// CDR (section 4.2) has no notion of scans.
//
// The signal, the same whichever order is in force: at a choice, the least
// and the most recently used candidates (LRU's and MRU's victims) are paired
// and watched; the one used again first is the one that should have stayed.
// LRU's first means a scan (the oldest unit is the next one the cycle
// needs); MRU's first means reuse (what was just used is used again). A
// moving average of these verdicts above 0.6 turns MRU on, below 0.4 off.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class ScanResistantPolicy final : public ReplacementPolicy {
public:
  explicit ScanResistantPolicy(std::unique_ptr<ReplacementPolicy> base) : base_(std::move(base)) {}
  std::string_view name() const override { return "adaptive"; }

  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    std::size_t oldest = 0, newest = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      now_ = std::max(now_, candidates[i].lastUse);
      if (candidates[i].lastUse < candidates[oldest].lastUse) oldest = i;
      if (candidates[i].lastUse > candidates[newest].lastUse) newest = i;
    }
    judge(candidates);
    if (oldest != newest && pairs_.size() < kMaxPairs)
      pairs_.push_back({candidates[oldest].id, candidates[newest].id, now_});
    return scanning_ ? newest : base_->chooseVictim(candidates);
  }

private:
  struct Pair {
    std::uint64_t lruVictim; // the least recently used candidate at the choice
    std::uint64_t mruVictim; // the most recently used one
    std::uint64_t chosenAt;  // logical time of the choice: a later last use means used since
  };
  static constexpr std::size_t kMaxPairs = 256;

  // Verdicts on the pairs one of whose units was used again (seen as a
  // candidate with a later last use: resident, or evicted and loaded back).
  // A pair neither of which comes back within a few device-fulls of
  // launches says nothing and is dropped.
  void judge(std::span<const EvictionCandidate> candidates) {
    lastUse_.clear();
    for (const EvictionCandidate& candidate : candidates)
      lastUse_[candidate.id] = candidate.lastUse;
    const std::uint64_t horizon = 8 * static_cast<std::uint64_t>(candidates.size()) + 64;
    std::erase_if(pairs_, [&](const Pair& pair) {
      const std::uint64_t lru = usedSince(pair.lruVictim, pair.chosenAt);
      const std::uint64_t mru = usedSince(pair.mruVictim, pair.chosenAt);
      if (lru == 0 && mru == 0) return now_ - pair.chosenAt > horizon;
      // Both back: the earlier last use stands for the earlier reuse.
      vote(mru == 0 || (lru != 0 && lru < mru));
      return true;
    });
  }

  // The unit's last use if it is later than `since`, else 0.
  std::uint64_t usedSince(std::uint64_t id, std::uint64_t since) const {
    auto it = lastUse_.find(id);
    return it != lastUse_.end() && it->second > since ? it->second : 0;
  }

  void vote(bool lruVictimCameBackFirst) {
    score_ = 0.9 * score_ + (lruVictimCameBackFirst ? 0.1 : 0.0);
    if (!scanning_ && score_ > 0.6) scanning_ = true;
    if (scanning_ && score_ < 0.4) scanning_ = false;
  }

  std::unique_ptr<ReplacementPolicy> base_;
  std::vector<Pair> pairs_;
  std::unordered_map<std::uint64_t, std::uint64_t> lastUse_; // this choice's candidates, reused
  std::uint64_t now_ = 0;
  double score_ = 0.0;
  bool scanning_ = false;
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeScanResistantPolicy(std::unique_ptr<ReplacementPolicy> base) {
  return std::make_unique<ScanResistantPolicy>(std::move(base));
}

} // namespace mqx
