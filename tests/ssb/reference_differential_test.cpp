// The CPU reference against the naive nested-loop implementation of the
// tests, query by query, on dense synthetic data (three seeds) and on
// generated data.
#include "decoded_tables.hpp"
#include "naive_queries.hpp"
#include "query_test_name.hpp"
#include "ssb/common/column_cache.hpp"
#include "ssb/reference/reference_queries.hpp"
#include "synthetic_data.hpp"
#include "temp_dir.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

namespace mqx::ssb {
namespace {

// Rows a naive result must have for the comparison to mean something:
// grouped queries must produce several groups, flight 1 a non-NULL sum.
void expectSubstantial(const QueryResult &result) {
  if (queryInfo(result.query).orderBy.empty()) {
    ASSERT_EQ(result.rows.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<std::int64_t>(result.rows[0][0])) << "sum over no rows";
  } else {
    EXPECT_GE(result.rows.size(), 2u) << "the data should select several groups";
  }
}

class ReferenceDifferentialTest : public ::testing::TestWithParam<QueryId> {};

TEST_P(ReferenceDifferentialTest, MatchesNaiveImplementationOnSyntheticData) {
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    test::TempDir dir;
    test::writeSyntheticData(dir.path(), seed);
    SsbData data = SsbData::open(dir.path());
    ColumnCache cache(data);
    QueryResult reference = runReferenceQuery(GetParam(), cache);
    QueryResult naive = test::runNaiveQuery(GetParam(), test::decodeTables(test::sourceOf(data)));
    expectSubstantial(naive);
    EXPECT_EQ(describeDifference(naive, reference), "") << "seed " << seed;
    EXPECT_EQ(naive, reference) << "seed " << seed;
  }
}

TEST_P(ReferenceDifferentialTest, MatchesNaiveImplementationOnGeneratedData) {
  const SsbData &data = test::generatedDataset(0.01, 7).data;
  ColumnCache cache(data);
  QueryResult reference = runReferenceQuery(GetParam(), cache);
  QueryResult naive = test::runNaiveQuery(GetParam(), test::decodeTables(test::sourceOf(data)));
  EXPECT_EQ(describeDifference(naive, reference), "");
  EXPECT_EQ(naive, reference);
}

TEST_P(ReferenceDifferentialTest, ResultIsCanonicalAndRepeatable) {
  const SsbData &data = test::generatedDataset(0.01, 7).data;
  ColumnCache cache(data);
  QueryResult first = runReferenceQuery(GetParam(), cache);
  QueryResult resorted = first;
  canonicalize(resorted);
  EXPECT_EQ(first, resorted);
  EXPECT_EQ(first, runReferenceQuery(GetParam(), cache));
  EXPECT_EQ(first.columns.size(), queryInfo(GetParam()).columns.size());
  for (const Row &row : first.rows)
    EXPECT_EQ(row.size(), first.columns.size());
}

INSTANTIATE_TEST_SUITE_P(AllQueries, ReferenceDifferentialTest, ::testing::ValuesIn(kAllQueries),
                         test::queryTestName);

} // namespace
} // namespace mqx::ssb
