#include "naive_queries.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace mqx::ssb::test {
namespace {

// Nested-loop join step: the dimension row whose key matches, or nullptr.
template <class Row, class Key>
const Row *scanFor(const std::vector<Row> &rows, Key Row::*key, std::int32_t value) {
  for (const Row &row : rows)
    if (row.*key == value)
      return &row;
  return nullptr;
}

bool isUkCity(const std::string &city) { return city == "UNITED KI1" || city == "UNITED KI5"; }

QueryResult flight1(QueryId query, const DecodedTables &t) {
  std::int64_t sum = 0;
  bool any = false;
  for (const LineorderRow &lo : t.lineorder) {
    const DateRow *d = scanFor(t.dates, &DateRow::datekey, lo.orderdate);
    if (d == nullptr)
      continue;
    bool pass = false;
    if (query == QueryId::Q1_1)
      pass = d->year == 1993 && lo.discount >= 1 && lo.discount <= 3 && lo.quantity < 25;
    else if (query == QueryId::Q1_2)
      pass = d->yearmonthnum == 199401 && lo.discount >= 4 && lo.discount <= 6 &&
             lo.quantity >= 26 && lo.quantity <= 35;
    else
      pass = d->weeknuminyear == 6 && d->year == 1994 && lo.discount >= 5 && lo.discount <= 7 &&
             lo.quantity >= 36 && lo.quantity <= 40;
    if (pass) {
      sum += static_cast<std::int64_t>(lo.extendedprice) * lo.discount;
      any = true;
    }
  }
  QueryResult result = emptyResult(query);
  result.rows.push_back(Row{any ? Value{sum} : Value{}});
  return result;
}

QueryResult flight2(QueryId query, const DecodedTables &t) {
  std::map<std::tuple<std::int64_t, std::string>, std::int64_t> groups; // (d_year, p_brand1)
  for (const LineorderRow &lo : t.lineorder) {
    const DateRow *d = scanFor(t.dates, &DateRow::datekey, lo.orderdate);
    const PartRow *p = scanFor(t.parts, &PartRow::partkey, lo.partkey);
    const SupplierRow *s = scanFor(t.suppliers, &SupplierRow::suppkey, lo.suppkey);
    if (d == nullptr || p == nullptr || s == nullptr)
      continue;
    bool pass = false;
    if (query == QueryId::Q2_1)
      pass = p->category == "MFGR#12" && s->region == "AMERICA";
    else if (query == QueryId::Q2_2)
      pass = p->brand1 >= "MFGR#2221" && p->brand1 <= "MFGR#2228" && s->region == "ASIA";
    else
      pass = p->brand1 == "MFGR#2239" && s->region == "EUROPE";
    if (pass)
      groups[{d->year, p->brand1}] += lo.revenue;
  }
  // std::map iterates in (d_year, p_brand1) order: the query's ORDER BY.
  QueryResult result = emptyResult(query);
  for (const auto &[key, sum] : groups)
    result.rows.push_back(Row{sum, std::get<0>(key), std::get<1>(key)});
  return result;
}

QueryResult flight3(QueryId query, const DecodedTables &t) {
  std::map<std::tuple<std::string, std::string, std::int64_t>, std::int64_t> groups;
  for (const LineorderRow &lo : t.lineorder) {
    const CustomerRow *c = scanFor(t.customers, &CustomerRow::custkey, lo.custkey);
    const SupplierRow *s = scanFor(t.suppliers, &SupplierRow::suppkey, lo.suppkey);
    const DateRow *d = scanFor(t.dates, &DateRow::datekey, lo.orderdate);
    if (c == nullptr || s == nullptr || d == nullptr)
      continue;
    bool years = d->year >= 1992 && d->year <= 1997;
    if (query == QueryId::Q3_1) {
      if (c->region == "ASIA" && s->region == "ASIA" && years)
        groups[{c->nation, s->nation, d->year}] += lo.revenue;
    } else if (query == QueryId::Q3_2) {
      if (c->nation == "UNITED STATES" && s->nation == "UNITED STATES" && years)
        groups[{c->city, s->city, d->year}] += lo.revenue;
    } else if (query == QueryId::Q3_3) {
      if (isUkCity(c->city) && isUkCity(s->city) && years)
        groups[{c->city, s->city, d->year}] += lo.revenue;
    } else if (isUkCity(c->city) && isUkCity(s->city) && d->yearmonth == "Dec1997") {
      groups[{c->city, s->city, d->year}] += lo.revenue;
    }
  }
  QueryResult result = emptyResult(query);
  for (const auto &[key, sum] : groups)
    result.rows.push_back(Row{std::get<0>(key), std::get<1>(key), std::get<2>(key), sum});
  // ORDER BY d_year asc, revenue desc; ties by the leading columns.
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const Row &a, const Row &b) {
    auto year = [](const Row &r) { return std::get<std::int64_t>(r[2]); };
    auto revenue = [](const Row &r) { return std::get<std::int64_t>(r[3]); };
    if (year(a) != year(b))
      return year(a) < year(b);
    return revenue(a) > revenue(b);
  });
  return result;
}

QueryResult flight4(QueryId query, const DecodedTables &t) {
  std::map<std::tuple<std::int64_t, std::string, std::string>, std::int64_t> groups;
  for (const LineorderRow &lo : t.lineorder) {
    const DateRow *d = scanFor(t.dates, &DateRow::datekey, lo.orderdate);
    const CustomerRow *c = scanFor(t.customers, &CustomerRow::custkey, lo.custkey);
    const SupplierRow *s = scanFor(t.suppliers, &SupplierRow::suppkey, lo.suppkey);
    const PartRow *p = scanFor(t.parts, &PartRow::partkey, lo.partkey);
    if (d == nullptr || c == nullptr || s == nullptr || p == nullptr)
      continue;
    std::int64_t profit = static_cast<std::int64_t>(lo.revenue) - lo.supplycost;
    bool mfgr12 = p->mfgr == "MFGR#1" || p->mfgr == "MFGR#2";
    bool lateYears = d->year == 1997 || d->year == 1998;
    if (query == QueryId::Q4_1) {
      if (c->region == "AMERICA" && s->region == "AMERICA" && mfgr12)
        groups[{d->year, c->nation, ""}] += profit;
    } else if (query == QueryId::Q4_2) {
      if (c->region == "AMERICA" && s->region == "AMERICA" && lateYears && mfgr12)
        groups[{d->year, s->nation, p->category}] += profit;
    } else if (c->region == "AMERICA" && s->nation == "UNITED STATES" && lateYears &&
               p->category == "MFGR#14") {
      groups[{d->year, s->city, p->brand1}] += profit;
    }
  }
  // std::map order is the ORDER BY of all three queries.
  QueryResult result = emptyResult(query);
  for (const auto &[key, sum] : groups) {
    if (query == QueryId::Q4_1)
      result.rows.push_back(Row{std::get<0>(key), std::get<1>(key), sum});
    else
      result.rows.push_back(Row{std::get<0>(key), std::get<1>(key), std::get<2>(key), sum});
  }
  return result;
}

} // namespace

QueryResult runNaiveQuery(QueryId query, const DecodedTables &tables) {
  switch (query) {
  case QueryId::Q1_1:
  case QueryId::Q1_2:
  case QueryId::Q1_3: return flight1(query, tables);
  case QueryId::Q2_1:
  case QueryId::Q2_2:
  case QueryId::Q2_3: return flight2(query, tables);
  case QueryId::Q3_1:
  case QueryId::Q3_2:
  case QueryId::Q3_3:
  case QueryId::Q3_4: return flight3(query, tables);
  default: return flight4(query, tables);
  }
}

} // namespace mqx::ssb::test
