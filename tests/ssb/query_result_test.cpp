// The query catalog and the canonical result form.
#include "ssb/reference/query_catalog.hpp"
#include "ssb/reference/query_result.hpp"

#include <gtest/gtest.h>

namespace mqx::ssb {
namespace {

TEST(QueryCatalogTest, NamesParseBothWays) {
  for (QueryId query : kAllQueries) {
    std::string name(queryName(query));
    EXPECT_EQ(parseQueryName(name), query);
    EXPECT_EQ(parseQueryName("Q" + name.substr(1)), query);
    EXPECT_EQ(parseQueryName(name.substr(1)), query);
    EXPECT_FALSE(queryInfo(query).sql.empty());
    EXPECT_GT(queryInfo(query).specFilterFactor, 0.0);
  }
  EXPECT_EQ(queryName(QueryId::Q3_4), "q3.4");
  EXPECT_FALSE(parseQueryName("q5.1").has_value());
  EXPECT_FALSE(parseQueryName("q1").has_value());
  EXPECT_FALSE(parseQueryName("").has_value());
}

TEST(QueryCatalogTest, PublishedFilterFactors) {
  // The figures printed in the specification, to its precision.
  EXPECT_NEAR(queryInfo(QueryId::Q1_1).specFilterFactor, 0.019, 0.0005);
  EXPECT_NEAR(queryInfo(QueryId::Q1_2).specFilterFactor, 0.00065, 0.000005);
  EXPECT_NEAR(queryInfo(QueryId::Q1_3).specFilterFactor, 0.000075, 0.0000005);
  EXPECT_DOUBLE_EQ(queryInfo(QueryId::Q2_1).specFilterFactor, 0.008);
  EXPECT_DOUBLE_EQ(queryInfo(QueryId::Q2_2).specFilterFactor, 0.0016);
  EXPECT_DOUBLE_EQ(queryInfo(QueryId::Q2_3).specFilterFactor, 0.0002);
  EXPECT_NEAR(queryInfo(QueryId::Q3_1).specFilterFactor, 0.034, 0.0005);
  EXPECT_NEAR(queryInfo(QueryId::Q3_2).specFilterFactor, 0.0014, 0.00005);
  EXPECT_NEAR(queryInfo(QueryId::Q3_3).specFilterFactor, 0.000055, 0.0000005);
  EXPECT_NEAR(queryInfo(QueryId::Q3_4).specFilterFactor, 0.00000076, 0.000000005);
  EXPECT_DOUBLE_EQ(queryInfo(QueryId::Q4_1).specFilterFactor, 0.016);
  EXPECT_NEAR(queryInfo(QueryId::Q4_2).specFilterFactor, 0.0046, 0.00005);
  EXPECT_NEAR(queryInfo(QueryId::Q4_3).specFilterFactor, 0.000091, 0.0000005);
}

TEST(QueryResultTest, CanonicalOrderIsOrderByThenColumnsAscending) {
  // q3.x: ORDER BY d_year asc, revenue desc.
  QueryResult result = emptyResult(QueryId::Q3_2);
  ASSERT_EQ(result.columns, (std::vector<std::string>{"c_city", "s_city", "d_year", "revenue"}));
  result.rows = {Row{"B", "X", std::int64_t{1993}, std::int64_t{5}},
                 Row{"A", "Y", std::int64_t{1992}, std::int64_t{1}},
                 Row{"C", "X", std::int64_t{1992}, std::int64_t{9}},
                 Row{"A", "X", std::int64_t{1993}, std::int64_t{5}}};
  canonicalize(result);
  EXPECT_EQ(formatResult(result), "c_city | s_city | d_year | revenue\n"
                                  "C | X | 1992 | 9\n"
                                  "A | Y | 1992 | 1\n"
                                  "A | X | 1993 | 5\n" // revenue tie: c_city ascending
                                  "B | X | 1993 | 5\n");
}

TEST(QueryResultTest, DifferencesAreDescribed) {
  QueryResult a = emptyResult(QueryId::Q1_1);
  a.rows.push_back(Row{std::int64_t{42}});
  QueryResult b = a;
  EXPECT_EQ(describeDifference(a, b), "");
  b.rows[0][0] = Value{};
  EXPECT_EQ(formatValue(b.rows[0][0]), "NULL");
  EXPECT_EQ(describeDifference(a, b), "row 0: expected [42], got [NULL]");
  b.rows.clear();
  EXPECT_EQ(describeDifference(a, b), "expected 1 rows, got 0");
  EXPECT_NE(describeDifference(a, emptyResult(QueryId::Q1_2)), "");
}

} // namespace
} // namespace mqx::ssb
