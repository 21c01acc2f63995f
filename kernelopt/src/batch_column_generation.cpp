// The batch-level heuristic for larger instances: the knapsack paper's
// column generation (Algorithm 2, Eqs. 23-30). Patterns are batches that fit
// an SM; the master LP prices the kernels; the pricing problem looks for a
// batch whose prices sum above one (a column of negative reduced cost,
// Eq. 26). The final columns are rounded to a partition greedily, and the
// better of that and first-fit decreasing is returned.
#include "batch_context.hpp"

#include "kernelopt/packing_lp.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace mqx::kernelopt::detail {

namespace {

constexpr double kEpsilon = 1e-9;

using Pattern = std::vector<std::size_t>;

// Branch and bound over the kernels with a positive price, most expensive
// first: include or exclude each, pruned by "prices still to come cannot beat
// the best" and by the exact fit test (fitting is monotone, so a set that
// does not fit has no fitting superset).
class Pricing {
public:
  Pricing(BatchContext &context, const std::vector<double> &prices, std::size_t nodeLimit)
      : context_(context), prices_(prices), nodeLimit_(nodeLimit) {
    for (std::size_t item = 0; item < prices.size(); ++item)
      if (prices[item] > kEpsilon)
        order_.push_back(item);
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return prices[a] > prices[b]; });
    remaining_.assign(order_.size() + 1, 0.0);
    for (std::size_t k = order_.size(); k-- > 0;)
      remaining_[k] = remaining_[k + 1] + prices[order_[k]];
  }

  // The best pattern found with a price sum above one (empty if none).
  Pattern run() {
    Pattern current;
    search(0, current, 0.0);
    return best_;
  }
  // Whether the search finished, so that "no pattern" proves the LP optimal.
  bool complete() const { return nodes_ <= nodeLimit_; }

private:
  void search(std::size_t k, Pattern &current, double value) {
    if (++nodes_ > nodeLimit_)
      return;
    if (value > bestValue_ + kEpsilon) {
      bestValue_ = value;
      best_ = current;
    }
    if (k == order_.size() || value + remaining_[k] <= bestValue_ + kEpsilon)
      return;
    current.push_back(order_[k]);
    if (context_.fits(current))
      search(k + 1, current, value + prices_[order_[k]]);
    current.pop_back();
    search(k + 1, current, value);
  }

  BatchContext &context_;
  const std::vector<double> &prices_;
  std::size_t nodeLimit_;
  std::vector<std::size_t> order_;
  std::vector<double> remaining_;
  Pattern best_;
  double bestValue_ = 1.0; // only columns with a negative reduced cost 1 - sum(pi) are worth adding
  std::size_t nodes_ = 0;
};

// Turns columns into a partition: take patterns in the given order, each
// reduced to the kernels not yet covered (still fitting, by monotonicity).
std::vector<Pattern> coverInOrder(std::size_t items, const std::vector<Pattern> &patterns,
                                  const std::vector<std::size_t> &order) {
  std::vector<bool> covered(items, false);
  std::vector<Pattern> batches;
  for (std::size_t j : order) {
    Pattern batch;
    for (std::size_t item : patterns[j])
      if (!covered[item])
        batch.push_back(item);
    if (batch.empty())
      continue;
    for (std::size_t item : batch)
      covered[item] = true;
    batches.push_back(std::move(batch));
  }
  return batches;
}

// Greedy set cover: repeatedly the pattern that covers the most uncovered
// kernels, ties to the larger LP value.
std::vector<Pattern> greedyCover(std::size_t items, const std::vector<Pattern> &patterns,
                                 const std::vector<double> &usage) {
  std::vector<bool> covered(items, false);
  std::size_t left = items;
  std::vector<Pattern> batches;
  while (left > 0) {
    std::size_t best = patterns.size(), bestCount = 0;
    for (std::size_t j = 0; j < patterns.size(); ++j) {
      std::size_t count = 0;
      for (std::size_t item : patterns[j])
        count += covered[item] ? 0 : 1;
      if (count > bestCount || (count == bestCount && count > 0 && usage[j] > usage[best])) {
        best = j;
        bestCount = count;
      }
    }
    Pattern batch;
    for (std::size_t item : patterns[best])
      if (!covered[item])
        batch.push_back(item);
    for (std::size_t item : batch)
      covered[item] = true;
    left -= batch.size();
    batches.push_back(std::move(batch));
  }
  return batches;
}

// Empties the smallest batches into the others where every kernel finds room.
void mergeSmallBatches(BatchContext &context, std::vector<Pattern> &batches) {
  bool improved = true;
  while (improved && batches.size() > 1) {
    improved = false;
    std::vector<std::size_t> bySize(batches.size());
    std::iota(bySize.begin(), bySize.end(), 0);
    std::stable_sort(bySize.begin(), bySize.end(),
                     [&](std::size_t a, std::size_t b) { return batches[a].size() < batches[b].size(); });
    for (std::size_t victim : bySize) {
      std::vector<Pattern> trial = batches;
      bool emptied = true;
      for (std::size_t item : batches[victim]) {
        bool placed = false;
        for (std::size_t j = 0; j < trial.size() && !placed; ++j) {
          if (j == victim)
            continue;
          trial[j].push_back(item);
          placed = context.fits(trial[j]);
          if (!placed)
            trial[j].pop_back();
        }
        if (!placed) {
          emptied = false;
          break;
        }
      }
      if (emptied) {
        trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(victim));
        batches = std::move(trial);
        improved = true;
        break;
      }
    }
  }
}

void addPattern(std::vector<Pattern> &patterns, std::set<Pattern> &known, Pattern pattern) {
  std::sort(pattern.begin(), pattern.end());
  if (known.insert(pattern).second)
    patterns.push_back(std::move(pattern));
}

} // namespace

BatchPlan planColumnGeneration(BatchContext &context, const BatchOptions &options) {
  const std::size_t items = context.size();
  if (items == 0)
    return context.makePlan({}, BatchMethod::ColumnGeneration, 0);

  // Algorithm 2, line 1: the initial patterns are the single kernels and the
  // batches of first-fit decreasing.
  std::vector<Pattern> ffd = firstFitDecreasing(context);
  std::vector<Pattern> patterns;
  std::set<Pattern> known;
  for (std::size_t item = 0; item < items; ++item)
    addPattern(patterns, known, {item});
  for (const Pattern &batch : ffd)
    addPattern(patterns, known, batch);

  CoveringLpSolution lp;
  bool lpProven = false;
  for (int round = 0; round < options.maxColumnGenerationRounds; ++round) {
    lp = solveCoveringLp(items, patterns);
    Pricing pricing(context, lp.prices, options.pricingNodeLimit);
    Pattern column = pricing.run();
    if (column.empty()) {
      lpProven = pricing.complete();
      break;
    }
    addPattern(patterns, known, std::move(column));
  }
  if (!lpProven)
    lp = solveCoveringLp(items, patterns);

  std::vector<std::size_t> byUsage(patterns.size());
  std::iota(byUsage.begin(), byUsage.end(), 0);
  std::stable_sort(byUsage.begin(), byUsage.end(),
                   [&](std::size_t a, std::size_t b) { return lp.usage[a] > lp.usage[b]; });
  std::vector<std::vector<Pattern>> candidates{ffd, greedyCover(items, patterns, lp.usage),
                                               coverInOrder(items, patterns, byUsage)};
  for (auto &candidate : candidates)
    mergeSmallBatches(context, candidate);
  const auto best = std::min_element(candidates.begin(), candidates.end(),
                                     [](const auto &a, const auto &b) { return a.size() < b.size(); });
  const std::size_t lpBound = lpProven ? static_cast<std::size_t>(std::ceil(lp.value - 1e-6)) : 0;
  return context.makePlan(*best, BatchMethod::ColumnGeneration, lpBound);
}

} // namespace mqx::kernelopt::detail
