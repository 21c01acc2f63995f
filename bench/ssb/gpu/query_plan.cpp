#include "ssb/gpu/query_plan.hpp"

#include "ssb/common/error.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <string_view>

namespace mqx::ssb::gpu {
namespace {

// A code that no stored code equals, for a constant the dictionary lacks:
// the predicate then selects nothing, as SQL would (as the reference does).
constexpr std::int32_t kAbsentCode = -2;

std::int32_t codeOf(ColumnCache& cache, TableId table, std::string_view column, std::string_view value) {
  auto code = cache.dictionary(table, column).find(value);
  return code ? *code : kAbsentCode;
}

// The range of the group column over the dimension rows that pass the
// join's predicates: keeps the dense aggregation array small (Q4.3: 2 years
// x 10 US cities x 40 MFGR#14 brands, not 7 x 250 x 1000), since sorted
// dictionaries put the selected codes close together.
GroupDomain domainOf(ColumnCache& cache, const DimensionJoin& join) {
  const auto& values = cache.column(join.table, *join.groupColumn);
  std::vector<std::span<const std::int32_t>> filters;
  for (const ColumnPredicate& predicate : join.predicates)
    filters.push_back(cache.column(join.table, predicate.column));
  std::int32_t low = std::numeric_limits<std::int32_t>::max();
  std::int32_t high = std::numeric_limits<std::int32_t>::min();
  for (std::size_t i = 0; i < values.size(); ++i) {
    bool pass = true;
    for (std::size_t p = 0; p < filters.size() && pass; ++p)
      pass = join.predicates[p].accepted.contains(filters[p][i]);
    if (pass) {
      low = std::min(low, values[i]);
      high = std::max(high, values[i]);
    }
  }
  if (low > high) return {}; // nothing passes: one slot that stays empty
  return {low, high - low + 1};
}

DimensionJoin join(ColumnCache& cache, TableId table, std::string key, std::string factKey,
                   std::vector<ColumnPredicate> predicates, std::optional<std::string> groupColumn = std::nullopt) {
  DimensionJoin join{table, std::move(key), std::move(factKey), std::move(predicates), std::move(groupColumn), {}};
  if (join.groupColumn) join.domain = domainOf(cache, join);
  return join;
}

DimensionJoin dateJoin(ColumnCache& cache, std::vector<ColumnPredicate> predicates, bool groupByYear) {
  return join(cache, TableId::Date, "d_datekey", "lo_orderdate", std::move(predicates),
              groupByYear ? std::optional<std::string>("d_year") : std::nullopt);
}

using Kind = OutputColumn::Kind;

QueryPlan flight1(QueryId query, ColumnCache& cache) {
  QueryPlan plan{query, {}, {}, {MeasureKind::Product, "lo_extendedprice", "lo_discount"}, {{Kind::Sum}}};
  std::vector<ColumnPredicate> date;
  switch (query) {
  case QueryId::Q1_1:
    plan.factPredicates = {{"lo_discount", ValueSet::range(1, 3)},
                           {"lo_quantity", ValueSet::range(std::numeric_limits<std::int32_t>::min(), 24)}};
    date = {{"d_year", ValueSet::equal(1993)}};
    break;
  case QueryId::Q1_2:
    plan.factPredicates = {{"lo_discount", ValueSet::range(4, 6)}, {"lo_quantity", ValueSet::range(26, 35)}};
    date = {{"d_yearmonthnum", ValueSet::equal(199401)}};
    break;
  default:
    plan.factPredicates = {{"lo_discount", ValueSet::range(5, 7)}, {"lo_quantity", ValueSet::range(36, 40)}};
    date = {{"d_weeknuminyear", ValueSet::equal(6)}, {"d_year", ValueSet::equal(1994)}};
    break;
  }
  plan.joins.push_back(dateJoin(cache, std::move(date), false));
  return plan;
}

QueryPlan flight2(QueryId query, ColumnCache& cache) {
  QueryPlan plan{query, {}, {}, {MeasureKind::Value, "lo_revenue", ""}, {}};
  const Dictionary& brands = cache.dictionary(TableId::Part, "p_brand1");
  ColumnPredicate part;
  std::string_view region;
  switch (query) {
  case QueryId::Q2_1:
    part = {"p_category", ValueSet::equal(codeOf(cache, TableId::Part, "p_category", "MFGR#12"))};
    region = "AMERICA";
    break;
  case QueryId::Q2_2:
    // Sorted dictionary: a string BETWEEN is a code range.
    part = {"p_brand1", ValueSet::range(brands.lowerBound("MFGR#2221"), brands.upperBound("MFGR#2228") - 1)};
    region = "ASIA";
    break;
  default:
    part = {"p_brand1", ValueSet::range(brands.lowerBound("MFGR#2239"), brands.upperBound("MFGR#2239") - 1)};
    region = "EUROPE";
    break;
  }
  // Most selective join first: fewer rows reach the later operators.
  plan.joins.push_back(join(cache, TableId::Part, "p_partkey", "lo_partkey", {part}, "p_brand1"));
  plan.joins.push_back(join(cache, TableId::Supplier, "s_suppkey", "lo_suppkey",
                            {{"s_region", ValueSet::equal(codeOf(cache, TableId::Supplier, "s_region", region))}}));
  plan.joins.push_back(dateJoin(cache, {}, true));
  // sum(lo_revenue), d_year, p_brand1
  plan.output = {{Kind::Sum}, {Kind::Integer, 1}, {Kind::String, 0}};
  return plan;
}

QueryPlan flight3(QueryId query, ColumnCache& cache) {
  QueryPlan plan{query, {}, {}, {MeasureKind::Value, "lo_revenue", ""}, {}};
  struct Side {
    std::string filter;
    std::string_view first, second;
    std::string group;
  };
  Side customer, supplier;
  switch (query) {
  case QueryId::Q3_1:
    customer = {"c_region", "ASIA", "ASIA", "c_nation"};
    supplier = {"s_region", "ASIA", "ASIA", "s_nation"};
    break;
  case QueryId::Q3_2:
    customer = {"c_nation", "UNITED STATES", "UNITED STATES", "c_city"};
    supplier = {"s_nation", "UNITED STATES", "UNITED STATES", "s_city"};
    break;
  default:
    customer = {"c_city", "UNITED KI1", "UNITED KI5", "c_city"};
    supplier = {"s_city", "UNITED KI1", "UNITED KI5", "s_city"};
    break;
  }
  auto sideJoin = [&](TableId table, const Side& side, std::string key, std::string factKey) {
    ValueSet accepted =
        ValueSet::either(codeOf(cache, table, side.filter, side.first), codeOf(cache, table, side.filter, side.second));
    return join(cache, table, std::move(key), std::move(factKey), {{side.filter, accepted}}, side.group);
  };
  plan.joins.push_back(sideJoin(TableId::Customer, customer, "c_custkey", "lo_custkey"));
  plan.joins.push_back(sideJoin(TableId::Supplier, supplier, "s_suppkey", "lo_suppkey"));
  if (query == QueryId::Q3_4) {
    std::int32_t december = codeOf(cache, TableId::Date, "d_yearmonth", "Dec1997");
    plan.joins.push_back(dateJoin(cache, {{"d_yearmonth", ValueSet::equal(december)}}, true));
  } else {
    plan.joins.push_back(dateJoin(cache, {{"d_year", ValueSet::range(1992, 1997)}}, true));
  }
  // c_group, s_group, d_year, sum(lo_revenue)
  plan.output = {{Kind::String, 0}, {Kind::String, 1}, {Kind::Integer, 2}, {Kind::Sum}};
  return plan;
}

QueryPlan flight4(QueryId query, ColumnCache& cache) {
  QueryPlan plan{query, {}, {}, {MeasureKind::Difference, "lo_revenue", "lo_supplycost"}, {}};
  ColumnPredicate customerAmerica{"c_region", ValueSet::equal(codeOf(cache, TableId::Customer, "c_region", "AMERICA"))};
  ColumnPredicate supplierAmerica{"s_region", ValueSet::equal(codeOf(cache, TableId::Supplier, "s_region", "AMERICA"))};
  ColumnPredicate mfgr{"p_mfgr", ValueSet::either(codeOf(cache, TableId::Part, "p_mfgr", "MFGR#1"),
                                                  codeOf(cache, TableId::Part, "p_mfgr", "MFGR#2"))};
  std::vector<ColumnPredicate> lateYears{{"d_year", ValueSet::range(1997, 1998)}};
  switch (query) {
  case QueryId::Q4_1:
    plan.joins.push_back(join(cache, TableId::Customer, "c_custkey", "lo_custkey", {customerAmerica}, "c_nation"));
    plan.joins.push_back(join(cache, TableId::Supplier, "s_suppkey", "lo_suppkey", {supplierAmerica}));
    plan.joins.push_back(join(cache, TableId::Part, "p_partkey", "lo_partkey", {mfgr}));
    plan.joins.push_back(dateJoin(cache, {}, true));
    // d_year, c_nation, profit
    plan.output = {{Kind::Integer, 1}, {Kind::String, 0}, {Kind::Sum}};
    break;
  case QueryId::Q4_2:
    plan.joins.push_back(join(cache, TableId::Customer, "c_custkey", "lo_custkey", {customerAmerica}));
    plan.joins.push_back(join(cache, TableId::Supplier, "s_suppkey", "lo_suppkey", {supplierAmerica}, "s_nation"));
    plan.joins.push_back(join(cache, TableId::Part, "p_partkey", "lo_partkey", {mfgr}, "p_category"));
    plan.joins.push_back(dateJoin(cache, lateYears, true));
    // d_year, s_nation, p_category, profit
    plan.output = {{Kind::Integer, 2}, {Kind::String, 0}, {Kind::String, 1}, {Kind::Sum}};
    break;
  default: {
    ColumnPredicate us{"s_nation", ValueSet::equal(codeOf(cache, TableId::Supplier, "s_nation", "UNITED STATES"))};
    ColumnPredicate category{"p_category", ValueSet::equal(codeOf(cache, TableId::Part, "p_category", "MFGR#14"))};
    plan.joins.push_back(join(cache, TableId::Customer, "c_custkey", "lo_custkey", {customerAmerica}));
    plan.joins.push_back(join(cache, TableId::Supplier, "s_suppkey", "lo_suppkey", {us}, "s_city"));
    plan.joins.push_back(join(cache, TableId::Part, "p_partkey", "lo_partkey", {category}, "p_brand1"));
    plan.joins.push_back(dateJoin(cache, lateYears, true));
    // d_year, s_city, p_brand1, profit
    plan.output = {{Kind::Integer, 2}, {Kind::String, 0}, {Kind::String, 1}, {Kind::Sum}};
    break;
  }
  }
  return plan;
}

} // namespace

QueryPlan planQuery(QueryId query, ColumnCache& cache) {
  QueryPlan plan;
  switch (query) {
  case QueryId::Q1_1:
  case QueryId::Q1_2:
  case QueryId::Q1_3: plan = flight1(query, cache); break;
  case QueryId::Q2_1:
  case QueryId::Q2_2:
  case QueryId::Q2_3: plan = flight2(query, cache); break;
  case QueryId::Q3_1:
  case QueryId::Q3_2:
  case QueryId::Q3_3:
  case QueryId::Q3_4: plan = flight3(query, cache); break;
  default: plan = flight4(query, cache); break;
  }
  // The dense aggregation array must stay small: SSB's largest, Q4.3, has
  // 7 years x 250 cities x 1000 brands.
  if (groupSlots(plan) > (std::int64_t{1} << 26)) throw DataError("group-by domain too large for dense aggregation");
  return plan;
}

std::vector<const DimensionJoin*> groupedJoins(const QueryPlan& plan) {
  std::vector<const DimensionJoin*> grouped;
  for (const DimensionJoin& join : plan.joins)
    if (join.groupColumn) grouped.push_back(&join);
  return grouped;
}

std::int64_t groupSlots(const QueryPlan& plan) {
  std::int64_t slots = 1;
  for (const DimensionJoin* join : groupedJoins(plan))
    slots *= join->domain.size;
  return slots;
}

std::vector<std::int64_t> groupStrides(const QueryPlan& plan) {
  auto grouped = groupedJoins(plan);
  std::vector<std::int64_t> strides(grouped.size());
  std::int64_t stride = 1;
  for (std::size_t j = grouped.size(); j-- > 0;) {
    strides[j] = stride;
    stride *= grouped[j]->domain.size;
  }
  return strides;
}

std::vector<std::string> factColumns(const QueryPlan& plan) {
  std::vector<std::string> columns;
  auto add = [&](const std::string& column) {
    if (!column.empty() && std::find(columns.begin(), columns.end(), column) == columns.end())
      columns.push_back(column);
  };
  for (const ColumnPredicate& predicate : plan.factPredicates)
    add(predicate.column);
  for (const DimensionJoin& join : plan.joins)
    add(join.factKeyColumn);
  add(plan.measure.first);
  add(plan.measure.second);
  return columns;
}

} // namespace mqx::ssb::gpu
