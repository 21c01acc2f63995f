// The query scheduler's pure decisions (paper §5), the plan file and the
// learned-demand store.
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include "admission_policy.hpp"
#include "demand_history.hpp"
#include "query_plan.hpp"

namespace mqx::daemon {
namespace {

constexpr std::uint64_t MiB = 1 << 20;

AdmissionPolicy policy(AdmissionKind kind, std::uint64_t capacity, unsigned fixN = 2) {
  AdmissionPolicy p;
  p.kind = kind;
  p.capacity = capacity;
  p.fixN = fixN;
  return p;
}

TEST(AdmissionPolicy, WeightAdmitsWhileWeightedDemandsFit) {
  auto p = policy(AdmissionKind::Weight, 100 * MiB);
  // Peaks far above capacity do not matter to Weight: only weighted demands.
  std::vector<QueryDemand> waiting = {{1, 40 * MiB, 90 * MiB}, {2, 50 * MiB, 90 * MiB}, {3, 20 * MiB, 90 * MiB}};
  EXPECT_EQ(p.admit({}, waiting), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(p.admit({{9, 80 * MiB, 80 * MiB}}, waiting), (std::vector<std::uint32_t>{}));
  EXPECT_EQ(p.admit({{9, 60 * MiB, 60 * MiB}}, waiting), (std::vector<std::uint32_t>{1}));
}

TEST(AdmissionPolicy, PostponedQueriesAreServedInArrivalOrder) {
  auto p = policy(AdmissionKind::Weight, 100 * MiB);
  // Query 3 would fit, but 2 came first: no overtaking, so 2 cannot starve.
  std::vector<QueryDemand> waiting = {{2, 70 * MiB, 70 * MiB}, {3, 10 * MiB, 10 * MiB}};
  EXPECT_TRUE(p.admit({{1, 50 * MiB, 50 * MiB}}, waiting).empty());
  EXPECT_EQ(p.admit({}, waiting), (std::vector<std::uint32_t>{2, 3}));
}

TEST(AdmissionPolicy, OversizedQueryRunsAloneOnAnIdleNode) {
  auto p = policy(AdmissionKind::Weight, 100 * MiB);
  std::vector<QueryDemand> waiting = {{1, 300 * MiB, 300 * MiB}, {2, 1 * MiB, 1 * MiB}};
  EXPECT_EQ(p.admit({}, waiting), (std::vector<std::uint32_t>{1}));
  EXPECT_TRUE(p.admit({{7, 1, 1}}, waiting).empty());
}

TEST(AdmissionPolicy, PeakUsesPeakDemands) {
  auto p = policy(AdmissionKind::Peak, 100 * MiB);
  std::vector<QueryDemand> waiting = {{1, 30 * MiB, 60 * MiB}, {2, 30 * MiB, 60 * MiB}};
  EXPECT_EQ(p.admit({}, waiting), (std::vector<std::uint32_t>{1}));
  auto w = policy(AdmissionKind::Weight, 100 * MiB);
  EXPECT_EQ(w.admit({}, waiting), (std::vector<std::uint32_t>{1, 2}));
}

TEST(AdmissionPolicy, FixNCountsQueriesOnly) {
  auto p = policy(AdmissionKind::Fix, 1, 3);
  std::vector<QueryDemand> waiting = {{1, 500 * MiB, 500 * MiB}, {2, 500 * MiB, 500 * MiB}, {3, 1, 1}};
  EXPECT_EQ(p.admit({{8, 1, 1}}, waiting), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_TRUE(p.admit({{8, 1, 1}, {9, 1, 1}, {10, 1, 1}}, waiting).empty());
}

TEST(QueryPlan, WeightedDemandIsTimeWeightedMean) {
  auto plan = QueryPlan::parse(R"(
name = "q3"
[[operator]]
time = 1.0
memory = "100MiB"
[[operator]]
time = 3.0
memory = 20971520
)",
                               "plan");
  EXPECT_EQ(plan.name, "q3");
  // (1*100 + 3*20) / 4 = 40 MiB; peak 100 MiB.
  EXPECT_EQ(plan.weightedDemand(), 40 * MiB);
  EXPECT_EQ(plan.peakDemand(), 100 * MiB);
}

TEST(QueryPlan, BadPlansAreErrors) {
  EXPECT_THROW(QueryPlan::parse("name = \"x\"\n", "p"), ConfigError);
  EXPECT_THROW(QueryPlan::parse("[[operator]]\ntime = -1\nmemory = 1\n", "p"), ConfigError);
  EXPECT_THROW(QueryPlan::parse("[[operator]]\ntime = 1\n", "p"), ConfigError);
  EXPECT_THROW(QueryPlan::parse("[[operator]]\ntime = 1\nmemory = 1\nspeed = 2\n", "p"), ConfigError);
  EXPECT_THROW(QueryPlan::parse("junk = 1\n[[operator]]\ntime = 1\nmemory = 1\n", "p"), ConfigError);
}

TEST(DemandHistory, RecordsSurviveReload) {
  const std::string path = "/tmp/mqx-history-test-" + std::to_string(getpid());
  {
    DemandHistory history(path);
    EXPECT_FALSE(history.demandOf("q1"));
    history.record("q1", 123);
    history.record("q2", 456);
    history.record("q1", 789);
  }
  DemandHistory again(path);
  EXPECT_EQ(again.demandOf("q1"), 789u);
  EXPECT_EQ(again.demandOf("q2"), 456u);
  std::remove(path.c_str());
}

} // namespace
} // namespace mqx::daemon
