#include "ssb/gpu/executor.hpp"

#include "ssb/common/error.hpp"
#include "ssb/gpu/device_buffer.hpp"

#include <chrono>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <utility>

namespace mqx::ssb::gpu {
namespace {

using Column = DeviceBuffer<std::int32_t>;
using Clock = std::chrono::steady_clock;

std::int32_t rowCount(std::size_t rows) {
  if (rows > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw DataError("table too large for int32 row ids");
  return static_cast<std::int32_t>(rows);
}

// Every operator ends synchronised, so host wall time per step is the
// operator's time, transfers and allocations included.
class StepTimer {
public:
  StepTimer(QueryDevice& device, std::vector<OperatorTiming>& timings) : device_(device), timings_(timings) {}
  template <class Step> void run(std::string name, Step step) {
    device_.takeStepPeak();
    auto start = Clock::now();
    step();
    device_.synchronize();
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    timings_.push_back({std::move(name), elapsed.count(), device_.takeStepPeak()});
  }

private:
  QueryDevice& device_;
  std::vector<OperatorTiming>& timings_;
};

// The device copies of the base columns, uploaded once per query.
class DeviceColumns {
public:
  DeviceColumns(ColumnCache& cache, QueryDevice& device) : cache_(cache), device_(device) {}
  void upload(TableId table, const std::string& name) {
    auto key = std::make_pair(table, name);
    if (columns_.contains(key)) return;
    const auto& host = cache_.column(table, name);
    bytes_ += host.size() * sizeof(std::int32_t);
    columns_.emplace(key, Column::upload(device_, host));
  }
  void release(TableId table) {
    std::erase_if(columns_, [&](const auto& entry) { return entry.first.first == table; });
  }
  const std::int32_t* get(TableId table, const std::string& name) const {
    return columns_.at(std::make_pair(table, name)).get();
  }
  std::size_t bytes() const { return bytes_; }

private:
  ColumnCache& cache_;
  QueryDevice& device_;
  std::map<std::pair<TableId, std::string>, Column> columns_;
  std::size_t bytes_ = 0;
};

// Applies predicates one after the other (the first over the whole table,
// the others over the previous selection). Without predicates the selection
// stays empty (null), which the operators read as "all rows".
std::pair<Column, std::int32_t> selectAll(QueryDevice& device, const DeviceColumns& columns, TableId table,
                                          const std::vector<ColumnPredicate>& predicates, std::int32_t rows,
                                          DeviceBuffer<std::uint32_t>& counter, StepTimer& timer) {
  Column selection;
  std::int32_t count = rows;
  for (const ColumnPredicate& predicate : predicates) {
    timer.run("select " + predicate.column, [&] {
      Column out(device, static_cast<std::size_t>(count));
      count = device.selectRows(columns.get(table, predicate.column), selection.get(), count, predicate.accepted,
                                out.get(), counter.get());
      selection = std::move(out);
    });
  }
  return {std::move(selection), count};
}

DeviceMeasure deviceMeasure(MeasureKind kind) {
  switch (kind) {
  case MeasureKind::Product: return DeviceMeasure::Product;
  case MeasureKind::Value: return DeviceMeasure::Value;
  case MeasureKind::Difference: return DeviceMeasure::Difference;
  }
  return DeviceMeasure::Value;
}

// A dimension's hash table, kept until the lineorder pass is done.
// Keys and values share one allocation: under mqx every allocation is a
// region of at least the device granularity (2 MiB), and the fused kernel
// reads every table at once.
struct BuiltTable {
  DeviceBuffer<std::int32_t> slots; // capacity keys, then capacity values
  DeviceHashTable table;
};

// The dense aggregation arrays (zeroed), slots entries each.
struct AggregateArrays {
  unsigned long long* sums;
  unsigned long long* counts;
  std::size_t slots;
};

// The dense aggregation over the grouped joins' attributes (aligned with
// the measure's columns), into `arrays`.
void aggregate(QueryDevice& device, const QueryPlan& plan, const std::vector<Column>& attributes, const Column& first,
               const Column& second, std::int32_t count, StepTimer& timer, const AggregateArrays& arrays) {
  auto grouped = groupedJoins(plan);
  timer.run("aggregate", [&] {
    GroupKeys keys{};
    keys.count = static_cast<int>(grouped.size());
    if (keys.count > kMaxGroupKeys) throw DataError("too many group-by attributes");
    auto strides = groupStrides(plan);
    for (std::size_t j = 0; j < grouped.size(); ++j) {
      keys.column[j] = attributes[j].get();
      keys.base[j] = grouped[j]->domain.base;
      keys.stride[j] = strides[j];
    }
    device.aggregateGroups(keys, deviceMeasure(plan.measure.kind), first.get(), second.get(), count,
                           static_cast<std::int64_t>(arrays.slots), arrays.sums, arrays.counts);
  });
}

// Operator at a time: lineorder selections, one probe per join (carrying
// the grouped joins' payloads along by gather), the measure's projection,
// then the aggregation; every intermediate is a device buffer.
void aggregateByOperators(QueryDevice& device, const QueryPlan& plan, const DeviceColumns& columns,
                          std::vector<BuiltTable>& tables, std::int32_t factRows, DeviceBuffer<std::uint32_t>& counter,
                          StepTimer& timer, const AggregateArrays& arrays) {
  // `attributes`: the grouped joins' payloads, aligned with the selection.
  auto [selection, count] =
      selectAll(device, columns, TableId::Lineorder, plan.factPredicates, factRows, counter, timer);
  std::vector<Column> attributes;
  for (std::size_t j = 0; j < plan.joins.size(); ++j) {
    const DimensionJoin& join = plan.joins[j];
    bool carry = !attributes.empty();
    Column rows, positions, payload;
    std::int32_t matches = 0;
    timer.run("probe " + std::string(tableName(join.table)), [&] {
      rows = Column(device, static_cast<std::size_t>(count));
      if (carry) positions = Column(device, static_cast<std::size_t>(count));
      if (join.groupColumn) payload = Column(device, static_cast<std::size_t>(count));
      matches = device.probeHashTable(columns.get(TableId::Lineorder, join.factKeyColumn), selection.get(), count,
                                      tables[j].table, rows.get(), positions.get(), payload.get(), counter.get());
    });
    if (carry) {
      timer.run("gather attributes", [&] {
        for (Column& attribute : attributes) {
          Column moved(device, static_cast<std::size_t>(matches));
          device.gather(attribute.get(), positions.get(), matches, moved.get());
          attribute = std::move(moved);
        }
      });
    }
    if (join.groupColumn) attributes.push_back(std::move(payload));
    selection = std::move(rows);
    count = matches;
    tables[j] = BuiltTable{}; // the table is not needed any more
  }

  // Projection of the measure's columns, then the aggregation.
  Column first, second;
  timer.run("gather measures", [&] {
    first = Column(device, static_cast<std::size_t>(count));
    device.gather(columns.get(TableId::Lineorder, plan.measure.first), selection.get(), count, first.get());
    if (!plan.measure.second.empty()) {
      second = Column(device, static_cast<std::size_t>(count));
      device.gather(columns.get(TableId::Lineorder, plan.measure.second), selection.get(), count, second.get());
    }
  });

  aggregate(device, plan, attributes, first, second, count, timer, arrays);
}

// Fused: the whole lineorder pass in one kernel (fused_star.hpp).
void aggregateFused(QueryDevice& device, const QueryPlan& plan, const DeviceColumns& columns,
                    const std::vector<BuiltTable>& tables, std::int32_t factRows, StepTimer& timer,
                    const AggregateArrays& arrays) {
  if (plan.factPredicates.size() > kMaxFusedFilters || plan.joins.size() > kMaxFusedJoins)
    throw DataError("plan too large for the fused kernel");
  FusedStar star{};
  star.filterCount = static_cast<int>(plan.factPredicates.size());
  for (std::size_t f = 0; f < plan.factPredicates.size(); ++f) {
    star.filterColumn[f] = columns.get(TableId::Lineorder, plan.factPredicates[f].column);
    star.filter[f] = plan.factPredicates[f].accepted;
  }
  auto grouped = groupedJoins(plan);
  auto strides = groupStrides(plan);
  star.joinCount = static_cast<int>(plan.joins.size());
  std::size_t groupIndex = 0;
  for (std::size_t j = 0; j < plan.joins.size(); ++j) {
    const DimensionJoin& join = plan.joins[j];
    star.foreignKey[j] = columns.get(TableId::Lineorder, join.factKeyColumn);
    star.table[j] = tables[j].table;
    if (join.groupColumn) {
      star.base[j] = join.domain.base;
      star.stride[j] = strides[groupIndex++];
    } else {
      star.base[j] = 0;
      star.stride[j] = 0; // filters only: the payload 0 adds nothing
    }
  }
  star.measure = deviceMeasure(plan.measure.kind);
  star.first = columns.get(TableId::Lineorder, plan.measure.first);
  star.second = plan.measure.second.empty() ? nullptr : columns.get(TableId::Lineorder, plan.measure.second);
  timer.run("fused star", [&] { device.runFusedStar(star, factRows, arrays.sums, arrays.counts); });
}

// Join first (executor.hpp): the join index, then predicates and group
// attributes through it. `positions` are the dimension positions uploaded
// per join (0 .. rows-1), the payload of hash tables over all rows.
void aggregateJoinFirst(QueryDevice& device, const QueryPlan& plan, const DeviceColumns& columns,
                        const std::vector<Column>& dimensionPositions, ColumnCache& cache, std::int32_t factRows,
                        DeviceBuffer<std::uint32_t>& counter, StepTimer& timer, const AggregateArrays& arrays) {
  std::vector<BuiltTable> tables;
  for (std::size_t j = 0; j < plan.joins.size(); ++j) {
    const DimensionJoin& join = plan.joins[j];
    std::int32_t rows = rowCount(static_cast<std::size_t>(cache.rows(join.table)));
    BuiltTable built;
    timer.run("build " + std::string(tableName(join.table)) + " (all rows)", [&] {
      std::uint32_t capacity = hashCapacity(rows);
      built.slots = DeviceBuffer<std::int32_t>(device, 2 * std::size_t{capacity});
      built.table = {built.slots.get(), built.slots.get() + capacity, capacity};
      device.buildHashTable(columns.get(join.table, join.keyColumn), dimensionPositions[j].get(), nullptr, rows,
                            built.table);
    });
    tables.push_back(std::move(built));
  }

  // The join index: lineorder rows and, per join, the matching dimension
  // row's position, aligned.
  Column rows; // empty: every lineorder row
  std::int32_t count = factRows;
  std::vector<Column> positions;
  for (std::size_t j = 0; j < plan.joins.size(); ++j) {
    const DimensionJoin& join = plan.joins[j];
    bool carry = !positions.empty();
    Column matchedRows, probePositions, payload;
    std::int32_t matches = 0;
    timer.run("probe " + std::string(tableName(join.table)) + " (all rows)", [&] {
      matchedRows = Column(device, static_cast<std::size_t>(count));
      if (carry) probePositions = Column(device, static_cast<std::size_t>(count));
      payload = Column(device, static_cast<std::size_t>(count));
      matches =
          device.probeHashTable(columns.get(TableId::Lineorder, join.factKeyColumn), rows.get(), count, tables[j].table,
                                matchedRows.get(), probePositions.get(), payload.get(), counter.get());
    });
    if (carry) {
      timer.run("gather join index", [&] {
        for (Column& carried : positions) {
          Column moved(device, static_cast<std::size_t>(matches));
          device.gather(carried.get(), probePositions.get(), matches, moved.get());
          carried = std::move(moved);
        }
      });
    }
    positions.push_back(std::move(payload));
    rows = std::move(matchedRows);
    count = matches;
    tables[j] = BuiltTable{};
  }

  // Keeps the entries at `kept` positions of the join index.
  auto compact = [&](const Column& kept, std::int32_t keptCount) {
    timer.run("compact join index", [&] {
      Column movedRows(device, static_cast<std::size_t>(keptCount));
      device.gather(rows.get(), kept.get(), keptCount, movedRows.get());
      rows = std::move(movedRows);
      for (Column& carried : positions) {
        Column moved(device, static_cast<std::size_t>(keptCount));
        device.gather(carried.get(), kept.get(), keptCount, moved.get());
        carried = std::move(moved);
      }
    });
    count = keptCount;
  };
  // A predicate on values gathered through `index` from `source`.
  auto filter = [&](const std::string& name, const std::int32_t* source, const Column& index,
                    const ValueSet& accepted) {
    Column kept;
    std::int32_t keptCount = 0;
    timer.run("filter " + name, [&] {
      Column values(device, static_cast<std::size_t>(count));
      device.gather(source, index.get(), count, values.get());
      kept = Column(device, static_cast<std::size_t>(count));
      keptCount = device.selectRows(values.get(), nullptr, count, accepted, kept.get(), counter.get());
    });
    compact(kept, keptCount);
  };
  for (std::size_t j = 0; j < plan.joins.size(); ++j)
    for (const ColumnPredicate& predicate : plan.joins[j].predicates)
      filter(predicate.column, columns.get(plan.joins[j].table, predicate.column), positions[j], predicate.accepted);
  for (const ColumnPredicate& predicate : plan.factPredicates)
    filter(predicate.column, columns.get(TableId::Lineorder, predicate.column), rows, predicate.accepted);

  // Group attributes and measures through the index, then the aggregation.
  std::vector<Column> attributes;
  timer.run("gather attributes", [&] {
    for (std::size_t j = 0; j < plan.joins.size(); ++j) {
      if (!plan.joins[j].groupColumn) continue;
      Column attribute(device, static_cast<std::size_t>(count));
      device.gather(columns.get(plan.joins[j].table, *plan.joins[j].groupColumn), positions[j].get(), count,
                    attribute.get());
      attributes.push_back(std::move(attribute));
    }
  });
  positions.clear();
  Column firstMeasure, secondMeasure;
  timer.run("gather measures", [&] {
    firstMeasure = Column(device, static_cast<std::size_t>(count));
    device.gather(columns.get(TableId::Lineorder, plan.measure.first), rows.get(), count, firstMeasure.get());
    if (!plan.measure.second.empty()) {
      secondMeasure = Column(device, static_cast<std::size_t>(count));
      device.gather(columns.get(TableId::Lineorder, plan.measure.second), rows.get(), count, secondMeasure.get());
    }
  });
  aggregate(device, plan, attributes, firstMeasure, secondMeasure, count, timer, arrays);
}

} // namespace

QueryRun runPlan(const QueryPlan& plan, ColumnCache& cache, QueryDevice& device, Variant variant) {
  QueryRun run;
  StepTimer timer(device, run.operators);
  device.resetPeak();
  auto start = Clock::now();
  std::int32_t factRows = rowCount(static_cast<std::size_t>(cache.rows(TableId::Lineorder)));

  // Join first: each dimension row's position, the payload of its hash
  // table (host copies kept until the device buffers are gone).
  std::vector<std::vector<std::int32_t>> hostPositions;
  std::vector<Column> dimensionPositions;
  DeviceColumns columns(cache, device);
  timer.run("upload", [&] {
    // The fused kernel reads lineorder directly: it needs only the columns
    // it reads; the operators need the same ones.
    for (const std::string& name : factColumns(plan))
      columns.upload(TableId::Lineorder, name);
    for (const DimensionJoin& join : plan.joins) {
      columns.upload(join.table, join.keyColumn);
      for (const ColumnPredicate& predicate : join.predicates)
        columns.upload(join.table, predicate.column);
      if (join.groupColumn) columns.upload(join.table, *join.groupColumn);
      if (variant == Variant::JoinFirst) {
        auto& positions = hostPositions.emplace_back(static_cast<std::size_t>(cache.rows(join.table)));
        std::iota(positions.begin(), positions.end(), 0);
        dimensionPositions.push_back(Column::upload(device, std::span<const std::int32_t>(positions)));
      }
    }
  });
  run.uploadedBytes = columns.bytes();
  DeviceBuffer<std::uint32_t> counter(device, 1);

  // Sums, then counts, in one allocation (one region under mqx), made once
  // the dimensions are built (join first: before the join index).
  auto slots = static_cast<std::size_t>(groupSlots(plan));
  DeviceBuffer<unsigned long long> aggregateArrays;
  auto allocateArrays = [&] {
    aggregateArrays = DeviceBuffer<unsigned long long>(device, 2 * slots);
    device.zero(aggregateArrays.get(), aggregateArrays.bytes());
    return AggregateArrays{aggregateArrays.get(), aggregateArrays.get() + slots, slots};
  };

  if (variant == Variant::JoinFirst) {
    AggregateArrays arrays = allocateArrays();
    aggregateJoinFirst(device, plan, columns, dimensionPositions, cache, factRows, counter, timer, arrays);
  } else {
    // Dimensions: select, then build one hash table each.
    std::vector<BuiltTable> tables;
    for (const DimensionJoin& join : plan.joins) {
      std::int32_t rows = rowCount(static_cast<std::size_t>(cache.rows(join.table)));
      auto [selection, count] = selectAll(device, columns, join.table, join.predicates, rows, counter, timer);
      BuiltTable built;
      timer.run("build " + std::string(tableName(join.table)), [&] {
        std::uint32_t capacity = hashCapacity(count);
        built.slots = DeviceBuffer<std::int32_t>(device, 2 * std::size_t{capacity});
        built.table = {built.slots.get(), built.slots.get() + capacity, capacity};
        device.buildHashTable(columns.get(join.table, join.keyColumn),
                              join.groupColumn ? columns.get(join.table, *join.groupColumn) : nullptr, selection.get(),
                              count, built.table);
      });
      tables.push_back(std::move(built));
      // The dimension's columns are not read again: free their device memory.
      columns.release(join.table);
    }
    AggregateArrays arrays = allocateArrays();
    if (variant == Variant::Fused)
      aggregateFused(device, plan, columns, tables, factRows, timer, arrays);
    else
      aggregateByOperators(device, plan, columns, tables, factRows, counter, timer, arrays);
  }

  timer.run("download", [&] {
    auto raw = aggregateArrays.download(2 * slots);
    // Back from unsigned wrap-around to two's complement.
    run.aggregate.sums.assign(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(slots));
    run.aggregate.counts.assign(raw.begin() + static_cast<std::ptrdiff_t>(slots), raw.end());
  });
  std::chrono::duration<double, std::milli> total = Clock::now() - start;
  run.totalMilliseconds = total.count();
  run.peakDeviceBytes = device.peakBytes();
  return run;
}

} // namespace mqx::ssb::gpu
