// The fused variant of a star query's lineorder pass: selection, every
// probe, the measure's projection and the aggregation in one kernel, reading
// each lineorder column once and materialising no intermediate. The
// dimension hash tables are built first, as in the operator-at-a-time plan
// (a dependence: every probe needs its complete table). Comparing the two
// variants shows what fusion saves in device memory and time.
#pragma once

#include "ssb/gpu/operator_types.hpp"

namespace mqx::ssb::gpu {

// FusedStar (operator_types.hpp) describes the pass.
// sums[slot] += measure(r), counts[slot] += 1 for every lineorder row r < n
// that passes the filters and finds a match in every table. sums and counts
// must be zeroed by the caller.
void runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                  unsigned long long *counts);

} // namespace mqx::ssb::gpu
