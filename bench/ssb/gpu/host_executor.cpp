#include "ssb/gpu/host_executor.hpp"

#include <span>
#include <unordered_map>

namespace mqx::ssb::gpu {
namespace {

// Rows of `table` passing every predicate, in row order.
std::vector<std::int32_t> selectRows(TableId table, const std::vector<ColumnPredicate>& predicates,
                                     ColumnCache& cache) {
  auto rows = static_cast<std::size_t>(cache.rows(table));
  std::vector<std::int32_t> selected;
  for (std::size_t i = 0; i < rows; ++i)
    selected.push_back(static_cast<std::int32_t>(i));
  for (const ColumnPredicate& predicate : predicates) {
    const auto& column = cache.column(table, predicate.column);
    std::vector<std::int32_t> kept;
    for (std::int32_t row : selected)
      if (predicate.accepted.contains(column[static_cast<std::size_t>(row)])) kept.push_back(row);
    selected = std::move(kept);
  }
  return selected;
}

} // namespace

DenseAggregate runPlanOnHost(const QueryPlan& plan, ColumnCache& cache) {
  // Selection vector of lineorder rows and, aligned with it, each grouped
  // join's attribute: the intermediates the GPU executor materialises.
  std::vector<std::int32_t> selection = selectRows(TableId::Lineorder, plan.factPredicates, cache);
  std::vector<std::vector<std::int32_t>> attributes;
  for (const DimensionJoin& join : plan.joins) {
    std::unordered_map<std::int32_t, std::int32_t> table;
    const auto& keys = cache.column(join.table, join.keyColumn);
    std::span<const std::int32_t> payload;
    if (join.groupColumn) payload = cache.column(join.table, *join.groupColumn);
    for (std::int32_t row : selectRows(join.table, join.predicates, cache)) {
      auto r = static_cast<std::size_t>(row);
      table.emplace(keys[r], join.groupColumn ? payload[r] : 0);
    }
    const auto& foreignKeys = cache.column(TableId::Lineorder, join.factKeyColumn);
    std::vector<std::int32_t> kept, values;
    std::vector<std::size_t> positions;
    for (std::size_t i = 0; i < selection.size(); ++i) {
      auto hit = table.find(foreignKeys[static_cast<std::size_t>(selection[i])]);
      if (hit == table.end()) continue;
      kept.push_back(selection[i]);
      positions.push_back(i);
      values.push_back(hit->second);
    }
    for (auto& column : attributes) {
      std::vector<std::int32_t> gathered;
      for (std::size_t position : positions)
        gathered.push_back(column[position]);
      column = std::move(gathered);
    }
    if (join.groupColumn) attributes.push_back(std::move(values));
    selection = std::move(kept);
  }

  auto grouped = groupedJoins(plan);
  auto strides = groupStrides(plan);
  auto slots = static_cast<std::size_t>(groupSlots(plan));
  DenseAggregate aggregate{std::vector<std::int64_t>(slots, 0), std::vector<std::uint64_t>(slots, 0)};
  const auto& first = cache.column(TableId::Lineorder, plan.measure.first);
  std::span<const std::int32_t> second;
  if (!plan.measure.second.empty()) second = cache.column(TableId::Lineorder, plan.measure.second);
  for (std::size_t i = 0; i < selection.size(); ++i) {
    std::int64_t slot = 0;
    for (std::size_t j = 0; j < grouped.size(); ++j)
      slot += std::int64_t{attributes[j][i] - grouped[j]->domain.base} * strides[j];
    auto row = static_cast<std::size_t>(selection[i]);
    std::int64_t a = first[row];
    std::int64_t value = a;
    if (plan.measure.kind == MeasureKind::Product)
      value = a * second[row];
    else if (plan.measure.kind == MeasureKind::Difference)
      value = a - second[row];
    aggregate.sums[static_cast<std::size_t>(slot)] += value;
    aggregate.counts[static_cast<std::size_t>(slot)] += 1;
  }
  return aggregate;
}

} // namespace mqx::ssb::gpu
