#include "ssb/gpu/result_decoder.hpp"

#include "ssb/common/error.hpp"

namespace mqx::ssb::gpu {

QueryResult decodeResult(const QueryPlan &plan, const DenseAggregate &aggregate,
                         ColumnCache &cache) {
  auto grouped = groupedJoins(plan);
  auto slots = static_cast<std::size_t>(groupSlots(plan));
  if (aggregate.sums.size() != slots || aggregate.counts.size() != slots)
    throw DataError("aggregate of the wrong size for the plan");

  QueryResult result = emptyResult(plan.query);
  if (grouped.empty()) {
    // SQL's SUM without GROUP BY is one row, NULL over no rows.
    result.rows.push_back(Row{aggregate.counts[0] == 0 ? Value{} : Value{aggregate.sums[0]}});
    return result;
  }
  std::vector<std::int32_t> attributes(grouped.size());
  for (std::size_t slot = 0; slot < slots; ++slot) {
    if (aggregate.counts[slot] == 0)
      continue;
    std::size_t rest = slot;
    for (std::size_t j = grouped.size(); j-- > 0;) {
      auto size = static_cast<std::size_t>(grouped[j]->domain.size);
      attributes[j] = grouped[j]->domain.base + static_cast<std::int32_t>(rest % size);
      rest /= size;
    }
    Row row;
    for (const OutputColumn &column : plan.output) {
      switch (column.kind) {
      case OutputColumn::Kind::Sum: row.emplace_back(aggregate.sums[slot]); break;
      case OutputColumn::Kind::Integer:
        row.emplace_back(std::int64_t{attributes.at(column.groupIndex)});
        break;
      case OutputColumn::Kind::String: {
        const DimensionJoin &join = *grouped.at(column.groupIndex);
        row.emplace_back(
            cache.dictionary(join.table, *join.groupColumn).value(attributes[column.groupIndex]));
        break;
      }
      }
    }
    result.rows.push_back(std::move(row));
  }
  canonicalize(result);
  return result;
}

} // namespace mqx::ssb::gpu
