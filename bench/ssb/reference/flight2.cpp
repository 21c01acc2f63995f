// Flight 2: revenue per year and brand for a part category or brand range
// sold by suppliers of one region.
#include "ssb/reference/flight_support.hpp"
#include "ssb/reference/flights.hpp"
#include "ssb/reference/star_aggregate.hpp"

#include <array>

namespace mqx::ssb::detail {
namespace {

// The selected brands as a code range: dictionaries are sorted, so the
// category MFGR#12 is the brand codes from MFGR#12 up to the last MFGR#12xx,
// and BETWEEN on strings is BETWEEN on codes.
struct CodeRange {
  std::int32_t low, high; // inclusive
};

CodeRange brandRange(QueryId query, ColumnCache &cache) {
  const Dictionary &brands = cache.dictionary(TableId::Part, "p_brand1");
  switch (query) {
  case QueryId::Q2_1: return {0, brands.size() - 1}; // filtered by category instead
  case QueryId::Q2_2: return {brands.lowerBound("MFGR#2221"), brands.upperBound("MFGR#2228") - 1};
  default: return {brands.lowerBound("MFGR#2239"), brands.upperBound("MFGR#2239") - 1};
  }
}

KeyMap partMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Part, "p_partkey");
  const auto &brand = cache.column(TableId::Part, "p_brand1");
  const auto &category = cache.column(TableId::Part, "p_category");
  CodeRange brands = brandRange(query, cache);
  std::int32_t wantedCategory =
      query == QueryId::Q2_1 ? codeOf(cache, TableId::Part, "p_category", "MFGR#12") : kAbsentCode;
  return dimensionMap(key, brand, [&](std::size_t i) {
    if (query == QueryId::Q2_1)
      return category[i] == wantedCategory;
    return brands.low <= brand[i] && brand[i] <= brands.high;
  });
}

std::string_view supplierRegion(QueryId query) {
  switch (query) {
  case QueryId::Q2_1: return "AMERICA";
  case QueryId::Q2_2: return "ASIA";
  default: return "EUROPE";
  }
}

} // namespace

QueryResult runFlight2(QueryId query, ColumnCache &cache) {
  const auto &datekey = cache.column(TableId::Date, "d_datekey");
  const auto &year = cache.column(TableId::Date, "d_year");
  KeyMap dates(datekey, year);
  KeyMap parts = partMap(query, cache);
  const auto &suppkey = cache.column(TableId::Supplier, "s_suppkey");
  const auto &region = cache.column(TableId::Supplier, "s_region");
  std::int32_t wantedRegion = codeOf(cache, TableId::Supplier, "s_region", supplierRegion(query));
  KeyMap suppliers = filterMap(suppkey, [&](std::size_t i) { return region[i] == wantedRegion; });

  const auto &revenue = cache.column(TableId::Lineorder, "lo_revenue");
  std::array joins{StarJoin{cache.column(TableId::Lineorder, "lo_orderdate"), &dates},
                   StarJoin{cache.column(TableId::Lineorder, "lo_partkey"), &parts},
                   StarJoin{cache.column(TableId::Lineorder, "lo_suppkey"), &suppliers}};
  auto groups = starAggregate(
      joins, revenue.size(), [](std::size_t) { return true; },
      [&](std::size_t i) { return std::int64_t{revenue[i]}; });

  QueryResult result = emptyResult(query);
  for (const GroupSum &group : groups)
    result.rows.push_back(Row{group.sum, std::int64_t{group.attributes[0]},
                              decode(cache, TableId::Part, "p_brand1", group.attributes[1])});
  canonicalize(result);
  return result;
}

} // namespace mqx::ssb::detail
