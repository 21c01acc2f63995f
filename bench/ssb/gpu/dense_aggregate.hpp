// What every executor of a QueryPlan returns: one sum and one row count per
// slot of the dense group-by array (slot = mixed-radix number of the grouped
// joins' attributes, the first grouped join most significant). A slot with
// count 0 is a group that does not exist; the count, not the sum, decides,
// since a profit may sum to 0.
#pragma once

#include <cstdint>
#include <vector>

namespace mqx::ssb::gpu {

struct DenseAggregate {
  std::vector<std::int64_t> sums;
  std::vector<std::uint64_t> counts;
};

} // namespace mqx::ssb::gpu
