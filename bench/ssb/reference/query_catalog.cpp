#include "ssb/reference/query_catalog.hpp"

namespace mqx::ssb {
namespace {

constexpr std::array<std::string_view, 1> kFlight1Columns{"revenue"};
constexpr std::array<std::string_view, 3> kFlight2Columns{"sum(lo_revenue)", "d_year", "p_brand1"};
constexpr std::array<std::string_view, 4> kQ31Columns{"c_nation", "s_nation", "d_year", "revenue"};
constexpr std::array<std::string_view, 4> kQ32Columns{"c_city", "s_city", "d_year", "revenue"};
constexpr std::array<std::string_view, 3> kQ41Columns{"d_year", "c_nation", "profit"};
constexpr std::array<std::string_view, 4> kQ42Columns{"d_year", "s_nation", "p_category", "profit"};
constexpr std::array<std::string_view, 4> kQ43Columns{"d_year", "s_city", "p_brand1", "profit"};

constexpr std::array<OrderKey, 0> kNoOrder{};
constexpr std::array<OrderKey, 2> kFlight2Order{{{1, false}, {2, false}}};
constexpr std::array<OrderKey, 2> kFlight3Order{{{2, false}, {3, true}}};
constexpr std::array<OrderKey, 2> kQ41Order{{{0, false}, {1, false}}};
constexpr std::array<OrderKey, 3> kQ42Order{{{0, false}, {1, false}, {2, false}}};

constexpr std::array<QueryInfo, 13> kQueries{{
    {QueryId::Q1_1, "q1.1",
     "select sum(lo_extendedprice*lo_discount) as revenue from lineorder, date "
     "where lo_orderdate = d_datekey and d_year = 1993 "
     "and lo_discount between 1 and 3 and lo_quantity < 25",
     kFlight1Columns, kNoOrder, (1.0 / 7) * 0.5 * (3.0 / 11)},
    {QueryId::Q1_2, "q1.2",
     "select sum(lo_extendedprice*lo_discount) as revenue from lineorder, date "
     "where lo_orderdate = d_datekey and d_yearmonthnum = 199401 "
     "and lo_discount between 4 and 6 and lo_quantity between 26 and 35",
     kFlight1Columns, kNoOrder, (1.0 / 84) * (3.0 / 11) * 0.2},
    {QueryId::Q1_3, "q1.3",
     "select sum(lo_extendedprice*lo_discount) as revenue from lineorder, date "
     "where lo_orderdate = d_datekey and d_weeknuminyear = 6 and d_year = 1994 "
     "and lo_discount between 5 and 7 and lo_quantity between 36 and 40",
     kFlight1Columns, kNoOrder, (1.0 / 364) * (3.0 / 11) * 0.1},
    {QueryId::Q2_1, "q2.1",
     "select sum(lo_revenue), d_year, p_brand1 from lineorder, date, part, supplier "
     "where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey "
     "and p_category = 'MFGR#12' and s_region = 'AMERICA' "
     "group by d_year, p_brand1 order by d_year, p_brand1",
     kFlight2Columns, kFlight2Order, (1.0 / 25) * (1.0 / 5)},
    {QueryId::Q2_2, "q2.2",
     "select sum(lo_revenue), d_year, p_brand1 from lineorder, date, part, supplier "
     "where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey "
     "and p_brand1 between 'MFGR#2221' and 'MFGR#2228' and s_region = 'ASIA' "
     "group by d_year, p_brand1 order by d_year, p_brand1",
     kFlight2Columns, kFlight2Order, (1.0 / 125) * (1.0 / 5)},
    {QueryId::Q2_3, "q2.3",
     "select sum(lo_revenue), d_year, p_brand1 from lineorder, date, part, supplier "
     "where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey "
     "and p_brand1 = 'MFGR#2239' and s_region = 'EUROPE' "
     "group by d_year, p_brand1 order by d_year, p_brand1",
     kFlight2Columns, kFlight2Order, (1.0 / 1000) * (1.0 / 5)},
    {QueryId::Q3_1, "q3.1",
     "select c_nation, s_nation, d_year, sum(lo_revenue) as revenue "
     "from customer, lineorder, supplier, date "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey "
     "and c_region = 'ASIA' and s_region = 'ASIA' and d_year >= 1992 and d_year <= 1997 "
     "group by c_nation, s_nation, d_year order by d_year asc, revenue desc",
     kQ31Columns, kFlight3Order, (1.0 / 5) * (1.0 / 5) * (6.0 / 7)},
    {QueryId::Q3_2, "q3.2",
     "select c_city, s_city, d_year, sum(lo_revenue) as revenue "
     "from customer, lineorder, supplier, date "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey "
     "and c_nation = 'UNITED STATES' and s_nation = 'UNITED STATES' "
     "and d_year >= 1992 and d_year <= 1997 "
     "group by c_city, s_city, d_year order by d_year asc, revenue desc",
     kQ32Columns, kFlight3Order, (1.0 / 25) * (1.0 / 25) * (6.0 / 7)},
    {QueryId::Q3_3, "q3.3",
     "select c_city, s_city, d_year, sum(lo_revenue) as revenue "
     "from customer, lineorder, supplier, date "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey "
     "and (c_city = 'UNITED KI1' or c_city = 'UNITED KI5') "
     "and (s_city = 'UNITED KI1' or s_city = 'UNITED KI5') "
     "and d_year >= 1992 and d_year <= 1997 "
     "group by c_city, s_city, d_year order by d_year asc, revenue desc",
     kQ32Columns, kFlight3Order, (1.0 / 125) * (1.0 / 125) * (6.0 / 7)},
    {QueryId::Q3_4, "q3.4",
     "select c_city, s_city, d_year, sum(lo_revenue) as revenue "
     "from customer, lineorder, supplier, date "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey "
     "and (c_city = 'UNITED KI1' or c_city = 'UNITED KI5') "
     "and (s_city = 'UNITED KI1' or s_city = 'UNITED KI5') and d_yearmonth = 'Dec1997' "
     "group by c_city, s_city, d_year order by d_year asc, revenue desc",
     kQ32Columns, kFlight3Order, (1.0 / 125) * (1.0 / 125) * (1.0 / 84)},
    {QueryId::Q4_1, "q4.1",
     "select d_year, c_nation, sum(lo_revenue - lo_supplycost) as profit "
     "from date, customer, supplier, part, lineorder "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey "
     "and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_region = 'AMERICA' "
     "and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2') "
     "group by d_year, c_nation order by d_year, c_nation",
     kQ41Columns, kQ41Order, (1.0 / 5) * (1.0 / 5) * (2.0 / 5)},
    {QueryId::Q4_2, "q4.2",
     "select d_year, s_nation, p_category, sum(lo_revenue - lo_supplycost) as profit "
     "from date, customer, supplier, part, lineorder "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey "
     "and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_region = 'AMERICA' "
     "and (d_year = 1997 or d_year = 1998) and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2') "
     "group by d_year, s_nation, p_category order by d_year, s_nation, p_category",
     kQ42Columns, kQ42Order, (1.0 / 5) * (1.0 / 5) * (2.0 / 7) * (2.0 / 5)},
    {QueryId::Q4_3, "q4.3",
     "select d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) as profit "
     "from date, customer, supplier, part, lineorder "
     "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey "
     "and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_nation = 'UNITED STATES' "
     "and (d_year = 1997 or d_year = 1998) and p_category = 'MFGR#14' "
     "group by d_year, s_city, p_brand1 order by d_year, s_city, p_brand1",
     kQ43Columns, kQ42Order, (1.0 / 5) * (1.0 / 25) * (2.0 / 7) * (1.0 / 25)},
}};

} // namespace

const QueryInfo &queryInfo(QueryId id) { return kQueries[static_cast<std::size_t>(id)]; }

std::string_view queryName(QueryId id) { return queryInfo(id).name; }

std::optional<QueryId> parseQueryName(std::string_view name) {
  if (!name.empty() && (name.front() == 'q' || name.front() == 'Q'))
    name.remove_prefix(1);
  for (const QueryInfo &query : kQueries)
    if (query.name.substr(1) == name)
      return query.id;
  return std::nullopt;
}

} // namespace mqx::ssb
