// The SSB GPU engine's plans, checked without a GPU: each query's plan is
// run by the host executor (the same operator sequence as the GPU executor)
// and decoded by the same decoder, and must equal the CPU reference exactly.
// What remains untested here is the kernels themselves: the GPU tests
// (ctest -L gpu) compare the GPU programs with the reference.
#include "ssb/gpu/host_executor.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/gpu/result_decoder.hpp"
#include "ssb/reference/reference_queries.hpp"
#include "ssb_data_fixture.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace mqx::ssb::gpu {
namespace {

// Each query's plan run on the host over the fixture's data.
class PlanTest : public SsbDataTest {
protected:
  void checkQuery(QueryId query) {
    ASSERT_NE(cache_, nullptr) << "MQX_SSB_GPU_TEST_DATA is not set";
    QueryPlan plan = planQuery(query, *cache_);
    QueryResult actual = decodeResult(plan, runPlanOnHost(plan, *cache_), *cache_);
    QueryResult expected = runReferenceQuery(query, *cache_);
    EXPECT_EQ(describeDifference(expected, actual), "");
    // Q3.4 selects 7.6e-7 of lineorder: nothing at SF 0.1.
    if (query != QueryId::Q3_4) {
      EXPECT_FALSE(expected.rows.empty());
    }
    // Domains are taken over the dimension rows that pass, so even Q4.3
    // needs a few hundred slots, not 7 x 250 x 1000.
    EXPECT_LE(groupSlots(plan), 10'000);
    EXPECT_LE(groupedJoins(plan).size(), 4u);
  }
};

// One test per query: the host run of its plan equals the reference.
#define MQX_SSB_PLAN_TEST(id)                                                                                          \
  TEST_F(PlanTest, id) { checkQuery(QueryId::id); }
MQX_SSB_PLAN_TEST(Q1_1)
MQX_SSB_PLAN_TEST(Q1_2)
MQX_SSB_PLAN_TEST(Q1_3)
MQX_SSB_PLAN_TEST(Q2_1)
MQX_SSB_PLAN_TEST(Q2_2)
MQX_SSB_PLAN_TEST(Q2_3)
MQX_SSB_PLAN_TEST(Q3_1)
MQX_SSB_PLAN_TEST(Q3_2)
MQX_SSB_PLAN_TEST(Q3_3)
MQX_SSB_PLAN_TEST(Q3_4)
MQX_SSB_PLAN_TEST(Q4_1)
MQX_SSB_PLAN_TEST(Q4_2)
MQX_SSB_PLAN_TEST(Q4_3)

TEST(ValueSetTest, RangesAndPairs) {
  EXPECT_TRUE(ValueSet::range(1, 3).contains(1));
  EXPECT_TRUE(ValueSet::range(1, 3).contains(3));
  EXPECT_FALSE(ValueSet::range(1, 3).contains(4));
  EXPECT_TRUE(ValueSet::either(2, 7).contains(7));
  EXPECT_FALSE(ValueSet::either(2, 7).contains(5));
  EXPECT_FALSE(ValueSet::equal(-2).contains(0)); // an absent dictionary code
  EXPECT_TRUE(ValueSet::range(std::numeric_limits<std::int32_t>::min(), 24).contains(1));
}

} // namespace
} // namespace mqx::ssb::gpu
