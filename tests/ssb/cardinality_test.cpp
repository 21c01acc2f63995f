// Table cardinalities per scale factor against the SSB specification.
#include "ssb/datagen/scale.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace mqx::ssb {
namespace {

TEST(CardinalityTest, FormulaFollowsTheSpecification) {
  Cardinalities one = cardinalitiesFor(1);
  EXPECT_EQ(one.orders, 1'500'000);
  EXPECT_EQ(one.customers, 30'000);
  EXPECT_EQ(one.suppliers, 2'000);
  EXPECT_EQ(one.parts, 200'000);
  EXPECT_EQ(one.dates, 2'556);
  // part grows with 1 + floor(log2 SF).
  EXPECT_EQ(cardinalitiesFor(2).parts, 400'000);
  EXPECT_EQ(cardinalitiesFor(3).parts, 400'000);
  EXPECT_EQ(cardinalitiesFor(4).parts, 600'000);
  EXPECT_EQ(cardinalitiesFor(10).parts, 800'000);
  EXPECT_EQ(cardinalitiesFor(14).parts, 800'000); // the paper's scale factor
  EXPECT_EQ(cardinalitiesFor(100).parts, 1'400'000);
  Cardinalities ten = cardinalitiesFor(10);
  EXPECT_EQ(ten.orders, 15'000'000);
  EXPECT_EQ(ten.customers, 300'000);
  EXPECT_EQ(ten.suppliers, 20'000);
}

TEST(CardinalityTest, FractionalScaleFactorsScaleLinearly) {
  Cardinalities small = cardinalitiesFor(0.01);
  EXPECT_EQ(small.orders, 15'000);
  EXPECT_EQ(small.customers, 300);
  EXPECT_EQ(small.suppliers, 20);
  EXPECT_EQ(small.parts, 2'000);
  EXPECT_EQ(small.dates, 2'556);
  EXPECT_EQ(cardinalitiesFor(0.5).parts, 100'000);
  EXPECT_EQ(cardinalitiesFor(1.5).customers, 45'000);
  // Never an empty dimension.
  Cardinalities tiny = cardinalitiesFor(1e-7);
  EXPECT_EQ(tiny.customers, 1);
  EXPECT_EQ(tiny.suppliers, 1);
  EXPECT_EQ(tiny.parts, 1);
}

TEST(CardinalityTest, RejectsScaleFactorsOutsideTheSupportedRange) {
  for (double sf : {0.0, -1.0, 300.5, std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity()})
    EXPECT_THROW(cardinalitiesFor(sf), std::invalid_argument) << sf;
  EXPECT_NO_THROW(cardinalitiesFor(300));
}

class GeneratedCardinalityTest : public ::testing::TestWithParam<double> {};

TEST_P(GeneratedCardinalityTest, TablesHaveTheSpecifiedRowCounts) {
  double sf = GetParam();
  const SsbData &data = test::generatedDataset(sf, 3).data;
  Cardinalities expected = cardinalitiesFor(sf);
  EXPECT_EQ(data.rows(TableId::Customer), expected.customers);
  EXPECT_EQ(data.rows(TableId::Supplier), expected.suppliers);
  EXPECT_EQ(data.rows(TableId::Part), expected.parts);
  EXPECT_EQ(data.rows(TableId::Date), 2556);

  // Exactly 1,500,000 x SF orders ...
  auto orderkeys = data.loadColumn(TableId::Lineorder, "lo_orderkey");
  std::set<std::int32_t> orders(orderkeys.begin(), orderkeys.end());
  EXPECT_EQ(static_cast<std::int64_t>(orders.size()), expected.orders);
  // ... of 4 lines on average (uniform 1..7, standard deviation 2): about
  // 6,000,000 x SF rows, within five standard errors.
  double rows = static_cast<double>(data.rows(TableId::Lineorder));
  double mean = 4.0 * static_cast<double>(expected.orders);
  double tolerance = 5.0 * 2.0 * std::sqrt(static_cast<double>(expected.orders));
  EXPECT_NEAR(rows, mean, tolerance);
  EXPECT_NEAR(rows / (6'000'000 * sf), 1.0, 0.02);
}

INSTANTIATE_TEST_SUITE_P(SmallScaleFactors, GeneratedCardinalityTest,
                         ::testing::Values(0.01, 0.025, 0.05, 0.1));

} // namespace
} // namespace mqx::ssb
