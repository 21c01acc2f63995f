// Flight 3: revenue per customer and supplier nation or city and year, for
// customers and suppliers of one region, nation or pair of cities.
#include "ssb/reference/flight_support.hpp"
#include "ssb/reference/flights.hpp"
#include "ssb/reference/star_aggregate.hpp"

#include <array>

namespace mqx::ssb::detail {
namespace {

// One side (customer or supplier) of a flight 3 query: the column it is
// filtered on, the accepted values, and the column it is grouped by.
struct SideSpec {
  std::string_view filterColumn;
  std::array<std::string_view, 2> accepted; // a single value is listed twice
  std::string_view groupColumn;
};

SideSpec customerSide(QueryId query) {
  switch (query) {
  case QueryId::Q3_1: return {"c_region", {"ASIA", "ASIA"}, "c_nation"};
  case QueryId::Q3_2: return {"c_nation", {"UNITED STATES", "UNITED STATES"}, "c_city"};
  default: return {"c_city", {"UNITED KI1", "UNITED KI5"}, "c_city"};
  }
}

SideSpec supplierSide(QueryId query) {
  switch (query) {
  case QueryId::Q3_1: return {"s_region", {"ASIA", "ASIA"}, "s_nation"};
  case QueryId::Q3_2: return {"s_nation", {"UNITED STATES", "UNITED STATES"}, "s_city"};
  default: return {"s_city", {"UNITED KI1", "UNITED KI5"}, "s_city"};
  }
}

KeyMap sideMap(TableId table, std::string_view keyColumn, const SideSpec &side,
               ColumnCache &cache) {
  const auto &filter = cache.column(table, side.filterColumn);
  std::int32_t first = codeOf(cache, table, side.filterColumn, side.accepted[0]);
  std::int32_t second = codeOf(cache, table, side.filterColumn, side.accepted[1]);
  return dimensionMap(cache.column(table, keyColumn), cache.column(table, side.groupColumn),
                      [&](std::size_t i) { return filter[i] == first || filter[i] == second; });
}

KeyMap dateMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Date, "d_datekey");
  const auto &year = cache.column(TableId::Date, "d_year");
  if (query == QueryId::Q3_4) {
    const auto &yearMonth = cache.column(TableId::Date, "d_yearmonth");
    std::int32_t december = codeOf(cache, TableId::Date, "d_yearmonth", "Dec1997");
    return dimensionMap(key, year, [&](std::size_t i) { return yearMonth[i] == december; });
  }
  return dimensionMap(key, year, [&](std::size_t i) { return 1992 <= year[i] && year[i] <= 1997; });
}

} // namespace

QueryResult runFlight3(QueryId query, ColumnCache &cache) {
  SideSpec customer = customerSide(query);
  SideSpec supplier = supplierSide(query);
  KeyMap customers = sideMap(TableId::Customer, "c_custkey", customer, cache);
  KeyMap suppliers = sideMap(TableId::Supplier, "s_suppkey", supplier, cache);
  KeyMap dates = dateMap(query, cache);

  const auto &revenue = cache.column(TableId::Lineorder, "lo_revenue");
  std::array joins{StarJoin{cache.column(TableId::Lineorder, "lo_custkey"), &customers},
                   StarJoin{cache.column(TableId::Lineorder, "lo_suppkey"), &suppliers},
                   StarJoin{cache.column(TableId::Lineorder, "lo_orderdate"), &dates}};
  auto groups = starAggregate(
      joins, revenue.size(), [](std::size_t) { return true; },
      [&](std::size_t i) { return std::int64_t{revenue[i]}; });

  QueryResult result = emptyResult(query);
  for (const GroupSum &group : groups)
    result.rows.push_back(
        Row{decode(cache, TableId::Customer, customer.groupColumn, group.attributes[0]),
            decode(cache, TableId::Supplier, supplier.groupColumn, group.attributes[1]),
            std::int64_t{group.attributes[2]}, group.sum});
  canonicalize(result);
  return result;
}

} // namespace mqx::ssb::detail
