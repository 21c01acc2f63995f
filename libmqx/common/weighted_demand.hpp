// WeightedDemand: a query's memory demand in the paper's sense (§5),
// m = Σ tᵢmᵢ / Σ tᵢ over its operators (or observed intervals), and its peak
// max mᵢ. The one implementation for the plan file (daemon/query_plan), the
// advice API's declared operators and the launches' observed intervals
// (ipc/admission_client).
//
// Kept as a running weighted mean, not as the two sums: Σ tᵢmᵢ overflows a
// double for large enough times and sizes, and casting it back to a uint64
// was undefined; the mean never leaves [min mᵢ, max mᵢ], and the result is
// clamped there so that rounding never carries it past the peak
// (tests/fuzz/plan_fuzzer found the overflow in the plan's old sums).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mqx {

class WeightedDemand {
public:
  // One operator: `seconds` of run time holding `bytes`. Times that are not
  // positive and finite weigh nothing, but the bytes still count for the
  // bounds (an operator of no measured time still exists).
  void add(double seconds, std::uint64_t bytes) {
    smallest_ = std::min(smallest_, bytes);
    peak_ = std::max(peak_, bytes);
    any_ = true;
    if (!(seconds > 0) || !std::isfinite(seconds)) return;
    seconds_ += seconds;
    // mean += (m - mean) * t / T: exact in the limit, bounded at every step.
    mean_ += (static_cast<double>(bytes) - mean_) * (seconds / seconds_);
  }

  // Σ tᵢmᵢ / Σ tᵢ, rounded, within [min mᵢ, max mᵢ]; the peak when no
  // operator had a time, 0 when there was none.
  std::uint64_t weighted() const {
    if (!any_) return 0;
    if (!(seconds_ > 0)) return peak_;
    if (!(mean_ < static_cast<double>(peak_))) return peak_;
    if (!(mean_ > static_cast<double>(smallest_))) return smallest_;
    // Below the peak, so below 2^64: the cast is defined.
    return std::clamp(static_cast<std::uint64_t>(std::round(mean_)), smallest_, peak_);
  }
  std::uint64_t peak() const { return peak_; }

private:
  double seconds_ = 0;
  double mean_ = 0;
  std::uint64_t smallest_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t peak_ = 0;
  bool any_ = false;
};

} // namespace mqx
