// Flight 1: revenue gained by eliminating discounts in a date range,
// sum(lo_extendedprice * lo_discount) over a date, discount and quantity
// selection; no group-by.
#include "ssb/reference/flight_support.hpp"
#include "ssb/reference/flights.hpp"
#include "ssb/reference/star_aggregate.hpp"

#include <array>
#include <limits>

namespace mqx::ssb::detail {
namespace {

struct Range {
  std::int32_t low, high; // inclusive
  bool contains(std::int32_t v) const { return low <= v && v <= high; }
};

struct Flight1Constants {
  Range discount;
  Range quantity;
};

Flight1Constants constantsOf(QueryId query) {
  switch (query) {
  case QueryId::Q1_1: return {{1, 3}, {std::numeric_limits<std::int32_t>::min(), 24}}; // < 25
  case QueryId::Q1_2: return {{4, 6}, {26, 35}};
  default: return {{5, 7}, {36, 40}};
  }
}

KeyMap dateMap(QueryId query, ColumnCache &cache) {
  const auto &key = cache.column(TableId::Date, "d_datekey");
  const auto &year = cache.column(TableId::Date, "d_year");
  switch (query) {
  case QueryId::Q1_1: return filterMap(key, [&](std::size_t i) { return year[i] == 1993; });
  case QueryId::Q1_2: {
    const auto &yearMonth = cache.column(TableId::Date, "d_yearmonthnum");
    return filterMap(key, [&](std::size_t i) { return yearMonth[i] == 199401; });
  }
  default: {
    const auto &week = cache.column(TableId::Date, "d_weeknuminyear");
    return filterMap(key, [&](std::size_t i) { return week[i] == 6 && year[i] == 1994; });
  }
  }
}

} // namespace

QueryResult runFlight1(QueryId query, ColumnCache &cache) {
  Flight1Constants constants = constantsOf(query);
  KeyMap dates = dateMap(query, cache);
  const auto &orderdate = cache.column(TableId::Lineorder, "lo_orderdate");
  const auto &discount = cache.column(TableId::Lineorder, "lo_discount");
  const auto &quantity = cache.column(TableId::Lineorder, "lo_quantity");
  const auto &price = cache.column(TableId::Lineorder, "lo_extendedprice");

  std::array joins{StarJoin{orderdate, &dates}};
  auto groups = starAggregate(
      joins, orderdate.size(),
      [&](std::size_t i) {
        return constants.discount.contains(discount[i]) && constants.quantity.contains(quantity[i]);
      },
      [&](std::size_t i) { return std::int64_t{price[i]} * discount[i]; });

  QueryResult result = emptyResult(query);
  // SQL's SUM over no rows is NULL, still one row.
  result.rows.push_back(Row{groups.empty() ? Value{} : Value{groups.front().sum}});
  return result;
}

} // namespace mqx::ssb::detail
