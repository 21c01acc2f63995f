// Flight 4: profit (lo_revenue - lo_supplycost) drilling down from
// (year, customer nation) to (year, supplier nation, category) to
// (year, supplier city, brand) within the Americas.
#include "ssb/reference/flight_support.hpp"
#include "ssb/reference/flights.hpp"
#include "ssb/reference/star_aggregate.hpp"

#include <array>

namespace mqx::ssb::detail {
namespace {

bool isLateYear(std::int32_t year) { return year == 1997 || year == 1998; }

KeyMap dateMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Date, "d_datekey");
  const auto &year = cache.column(TableId::Date, "d_year");
  return dimensionMap(key, year,
                      [&](std::size_t i) { return query == QueryId::Q4_1 || isLateYear(year[i]); });
}

// Q4.1 groups by customer nation; the others only filter on customer region.
KeyMap customerMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Customer, "c_custkey");
  const auto &region = cache.column(TableId::Customer, "c_region");
  std::int32_t america = codeOf(cache, TableId::Customer, "c_region", "AMERICA");
  auto inAmerica = [&](std::size_t i) { return region[i] == america; };
  if (query == QueryId::Q4_1)
    return dimensionMap(key, cache.column(TableId::Customer, "c_nation"), inAmerica);
  return filterMap(key, inAmerica);
}

KeyMap supplierMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Supplier, "s_suppkey");
  if (query == QueryId::Q4_3) {
    const auto &nation = cache.column(TableId::Supplier, "s_nation");
    std::int32_t us = codeOf(cache, TableId::Supplier, "s_nation", "UNITED STATES");
    return dimensionMap(key, cache.column(TableId::Supplier, "s_city"),
                        [&](std::size_t i) { return nation[i] == us; });
  }
  const auto &region = cache.column(TableId::Supplier, "s_region");
  std::int32_t america = codeOf(cache, TableId::Supplier, "s_region", "AMERICA");
  auto inAmerica = [&](std::size_t i) { return region[i] == america; };
  if (query == QueryId::Q4_2)
    return dimensionMap(key, cache.column(TableId::Supplier, "s_nation"), inAmerica);
  return filterMap(key, inAmerica);
}

KeyMap partMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Part, "p_partkey");
  if (query == QueryId::Q4_3) {
    const auto &category = cache.column(TableId::Part, "p_category");
    std::int32_t wanted = codeOf(cache, TableId::Part, "p_category", "MFGR#14");
    return dimensionMap(key, cache.column(TableId::Part, "p_brand1"),
                        [&](std::size_t i) { return category[i] == wanted; });
  }
  const auto &mfgr = cache.column(TableId::Part, "p_mfgr");
  std::int32_t first = codeOf(cache, TableId::Part, "p_mfgr", "MFGR#1");
  std::int32_t second = codeOf(cache, TableId::Part, "p_mfgr", "MFGR#2");
  auto wantedMfgr = [&](std::size_t i) { return mfgr[i] == first || mfgr[i] == second; };
  if (query == QueryId::Q4_2)
    return dimensionMap(key, cache.column(TableId::Part, "p_category"), wantedMfgr);
  return filterMap(key, wantedMfgr);
}

Row rowOf(QueryId query, const GroupSum &group, ColumnCache &cache) {
  const auto &a = group.attributes; // date, customer, supplier, part
  std::int64_t year = a[0];
  switch (query) {
  case QueryId::Q4_1:
    return Row{year, decode(cache, TableId::Customer, "c_nation", a[1]), group.sum};
  case QueryId::Q4_2:
    return Row{year, decode(cache, TableId::Supplier, "s_nation", a[2]),
               decode(cache, TableId::Part, "p_category", a[3]), group.sum};
  default:
    return Row{year, decode(cache, TableId::Supplier, "s_city", a[2]),
               decode(cache, TableId::Part, "p_brand1", a[3]), group.sum};
  }
}

} // namespace

QueryResult runFlight4(QueryId query, ColumnCache &cache) {
  KeyMap dates = dateMap(query, cache);
  KeyMap customers = customerMap(query, cache);
  KeyMap suppliers = supplierMap(query, cache);
  KeyMap parts = partMap(query, cache);

  const auto &revenue = cache.column(TableId::Lineorder, "lo_revenue");
  const auto &supplycost = cache.column(TableId::Lineorder, "lo_supplycost");
  std::array joins{StarJoin{cache.column(TableId::Lineorder, "lo_orderdate"), &dates},
                   StarJoin{cache.column(TableId::Lineorder, "lo_custkey"), &customers},
                   StarJoin{cache.column(TableId::Lineorder, "lo_suppkey"), &suppliers},
                   StarJoin{cache.column(TableId::Lineorder, "lo_partkey"), &parts}};
  auto groups = starAggregate(
      joins, revenue.size(), [](std::size_t) { return true; },
      [&](std::size_t i) { return std::int64_t{revenue[i]} - supplycost[i]; });

  QueryResult result = emptyResult(query);
  for (const GroupSum &group : groups)
    result.rows.push_back(rowOf(query, group, cache));
  canonicalize(result);
  return result;
}

} // namespace mqx::ssb::detail
