// The plan of one SSB query for the operator-at-a-time engines of this
// directory: which lineorder columns are filtered on what, which dimensions
// are joined (filtered, and carrying which group-by attribute), what is
// summed, and how the result's columns are decoded. The plan holds values
// only (constants already looked up in the data's dictionaries), so the GPU
// executor and the host executor run exactly the same plan, and the host one
// checks the plan itself against the CPU reference without a GPU.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/value_set.hpp"
#include "ssb/reference/query_catalog.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mqx::ssb::gpu {

struct ColumnPredicate {
  std::string column;
  ValueSet accepted;
};

// A group-by attribute's values lie in [base, base + size): the dense
// aggregation array has one slot per combination of the attributes.
struct GroupDomain {
  std::int32_t base = 0;
  std::int32_t size = 1;
};

// One star join: the dimension rows passing `predicates` are put into a hash
// table keyed by `keyColumn`, carrying `groupColumn`'s value (0 when the
// dimension only filters); lineorder probes it through `factKeyColumn`.
struct DimensionJoin {
  TableId table;
  std::string keyColumn;
  std::string factKeyColumn;
  std::vector<ColumnPredicate> predicates;
  std::optional<std::string> groupColumn;
  GroupDomain domain; // of groupColumn's values
};

enum class MeasureKind {
  Product,    // first * second     (Q1.x: lo_extendedprice * lo_discount)
  Value,      // first              (Q2.x, Q3.x: lo_revenue)
  Difference, // first - second     (Q4.x: lo_revenue - lo_supplycost)
};

struct Measure {
  MeasureKind kind;
  std::string first;
  std::string second; // empty for Value
};

// One result column: the sum, or the value of the k-th grouped join's
// attribute, as an integer (years) or decoded through its dictionary.
struct OutputColumn {
  enum class Kind { Sum, Integer, String } kind;
  std::size_t groupIndex = 0; // among the joins that have a groupColumn
};

struct QueryPlan {
  QueryId query;
  std::vector<ColumnPredicate> factPredicates; // on lineorder, in order
  std::vector<DimensionJoin> joins;            // probed in this order
  Measure measure;
  std::vector<OutputColumn> output; // in the query's SELECT order
};

// Builds the plan of `query`, reading the dimension columns and
// dictionaries it needs from `cache` (group domains come from the data).
QueryPlan planQuery(QueryId query, ColumnCache &cache);

// The joins that carry a group-by attribute, in join order.
std::vector<const DimensionJoin *> groupedJoins(const QueryPlan &plan);
// Slots of the dense aggregation array: the product of the grouped domains.
std::int64_t groupSlots(const QueryPlan &plan);
// The slot of a group is sum_j (attribute_j - base_j) * stride_j over the
// grouped joins: mixed radix, the first grouped join most significant. Every
// executor uses these strides and result_decoder inverts them.
std::vector<std::int64_t> groupStrides(const QueryPlan &plan);
// Every lineorder column the plan reads (for loading them before timing).
std::vector<std::string> factColumns(const QueryPlan &plan);

} // namespace mqx::ssb::gpu
