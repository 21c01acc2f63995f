#include "kernelopt/architectures.hpp"
#include "kernelopt/fusion_planner.hpp"
#include "kernelopt/occupancy.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace mqx::kernelopt {
namespace {

using Ops = std::vector<std::size_t>;

// Kernel Weaver, Figures 9 and 10, reconstructed from the text (the figures
// themselves are not in the paper's text):
//
//   data3 = SELECT(data0)          data0, data1, data2 come out of SORTs
//   data4 = SELECT(data1)
//   data5 = JOIN(data3, data4)     SELECT -> JOIN: CTA dependence (§4.3.2)
//   data6 = JOIN(data5, data2)     JOIN -> JOIN: CTA dependence (Fig. 8(b))
//   data7 = SORT(data6)            anything -> SORT -> anything: kernel dependence
//   data8 = SELECT(data7)          (the SORT/SELECT pair of §6)
//
// The candidate set is bounded by the SORTs (Fig. 9(b)); Algorithm 2 fuses
// the first three operators (data3 and data4 become internal, Fig. 10(b)) and
// refuses the second JOIN because its shared memory breaks the budget
// (Fig. 10(c)). The estimates are illustrative: a Tesla C2070-like budget of
// 16 KiB and 63 registers per CTA (three CTAs on a 48 KiB SM), 2 KiB of
// staging per SELECT, 6 KiB per JOIN, 2 KiB per selected result and 4 KiB for
// the first JOIN's result.
struct FigureNine {
  OperatorGraph graph;
  std::size_t sortA, sortB, sortC, select1, select2, join1, join2, sortD, select3;

  FigureNine() {
    sortA = graph.addOperator({"SORT(data0)", 20, 4096});
    sortB = graph.addOperator({"SORT(data1)", 20, 4096});
    sortC = graph.addOperator({"SORT(data2)", 20, 4096});
    select1 = graph.addOperator({"data3 = SELECT(data0)", 12, 2048});
    select2 = graph.addOperator({"data4 = SELECT(data1)", 12, 2048});
    join1 = graph.addOperator({"data5 = JOIN(data3, data4)", 24, 6144});
    join2 = graph.addOperator({"data6 = JOIN(data5, data2)", 24, 6144});
    sortD = graph.addOperator({"data7 = SORT(data6)", 20, 4096});
    select3 = graph.addOperator({"data8 = SELECT(data7)", 12, 2048});
    graph.addDependence(sortA, select1, Dependence::Kernel);
    graph.addDependence(sortB, select2, Dependence::Kernel);
    graph.addDependence(sortC, join2, Dependence::Kernel);
    graph.addDependence(select1, join1, Dependence::Cta, {1, 2048});
    graph.addDependence(select2, join1, Dependence::Cta, {1, 2048});
    graph.addDependence(join1, join2, Dependence::Cta, {1, 4096});
    graph.addDependence(join2, sortD, Dependence::Kernel);
    graph.addDependence(sortD, select3, Dependence::Kernel);
  }
};

constexpr FusionBudget kFermiBudget{63, 16 * 1024};

TEST(FusionPlanner, FigureNineCandidatesAreBoundedBySorts) {
  FigureNine f;
  EXPECT_EQ(fusionCandidates(f.graph), (std::vector<Ops>{{f.select1, f.select2, f.join1, f.join2}}));
}

TEST(FusionPlanner, FigureTenFusesTheFirstThreeOperators) {
  FigureNine f;
  const FusionPlan plan = planFusion(f.graph, kFermiBudget);
  ASSERT_EQ(plan.groups.size(), 7u);
  // Groups in topological order: the three SORTs, the fused group, the
  // refused JOIN, then the SORT and SELECT after it.
  const FusionGroup &fused = plan.groups[3];
  EXPECT_EQ(fused.operators, (Ops{f.select1, f.select2, f.join1}));
  EXPECT_EQ(fused.end, GroupEnd::Budget);
  EXPECT_EQ(fused.exceeded, ResourceSet(Resource::SharedMemory));
  // 2 + 2 + 6 KiB of operators plus the two 2 KiB SELECT results; registers:
  // the largest operator (24) plus one size register per fused CTA edge.
  EXPECT_EQ(fused.estimate.sharedMemoryPerCta, 14 * 1024);
  EXPECT_EQ(fused.estimate.registersPerThread, 26);
  const FusionGroup &second = plan.groups[4];
  EXPECT_EQ(second.operators, (Ops{f.join2}));
  EXPECT_EQ(second.end, GroupEnd::EndOfCandidates);
  for (std::size_t g : {0u, 1u, 2u, 5u, 6u}) {
    EXPECT_EQ(plan.groups[g].operators.size(), 1u);
    EXPECT_EQ(plan.groups[g].end, GroupEnd::KernelDependence);
  }
  EXPECT_EQ(plan.groups[6].operators, (Ops{f.select3}));
}

// With a larger shared-memory budget the whole candidate set fuses: the
// grouping is decided by the budget, not by the shape of the graph.
TEST(FusionPlanner, LargerBudgetFusesTheWholeCandidate) {
  FigureNine f;
  const FusionPlan plan = planFusion(f.graph, {63, 32 * 1024});
  ASSERT_EQ(plan.groups.size(), 6u);
  EXPECT_EQ(plan.groups[3].operators, (Ops{f.select1, f.select2, f.join1, f.join2}));
  EXPECT_EQ(plan.groups[3].estimate.sharedMemoryPerCta, 24 * 1024);
}

// Back-to-back SELECTs (Fig. 14(a)) pass tuples in registers: the register
// budget ends the group.
TEST(FusionPlanner, ThreadDependencesAreBoundByRegisters) {
  OperatorGraph graph;
  std::vector<std::size_t> selects;
  for (int i = 0; i < 5; ++i)
    selects.push_back(graph.addOperator({"SELECT", 20, 0}));
  for (int i = 0; i + 1 < 5; ++i)
    graph.addDependence(selects[i], selects[i + 1], Dependence::Thread, {4, 0});
  // 20 + 4 per fused edge: three SELECTs take 28, four 32, five 36.
  const FusionPlan plan = planFusion(graph, {32, 48 * 1024});
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].operators.size(), 4u);
  EXPECT_EQ(plan.groups[0].estimate.registersPerThread, 32);
  EXPECT_EQ(plan.groups[0].exceeded, ResourceSet(Resource::Registers));
  EXPECT_EQ(plan.groups[1].operators.size(), 1u);
  EXPECT_EQ(plan.groups[0].estimate.sharedMemoryPerCta, 0); // thread dependences use no shared memory
}

// A and C are joined by a thread dependence, but C also consumes a SORT of
// A's output: fusing A and C would need the SORT both before and after.
TEST(FusionPlanner, NeverFusesAroundAnOutsideOperator) {
  OperatorGraph graph;
  const auto a = graph.addOperator({"A", 10, 0});
  const auto sort = graph.addOperator({"SORT", 10, 0});
  const auto c = graph.addOperator({"C", 10, 0});
  graph.addDependence(a, sort, Dependence::Kernel);
  graph.addDependence(sort, c, Dependence::Kernel);
  graph.addDependence(a, c, Dependence::Thread);
  const FusionPlan plan = planFusion(graph, {63, 1024});
  EXPECT_EQ(plan.candidates, (std::vector<Ops>{{a, c}}));
  ASSERT_EQ(plan.groups.size(), 3u);
  EXPECT_EQ(plan.groups[0].operators, (Ops{a}));
  EXPECT_EQ(plan.groups[0].end, GroupEnd::Ordering);
}

TEST(FusionPlanner, NeverFusesAcrossAKernelDependence) {
  OperatorGraph graph;
  const auto a = graph.addOperator({"A", 10, 0});
  const auto b = graph.addOperator({"B", 10, 0});
  graph.addDependence(a, b, Dependence::Thread);
  graph.addDependence(a, b, Dependence::Kernel);
  const FusionPlan plan = planFusion(graph, {63, 1024});
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].end, GroupEnd::Dependence);
}

TEST(FusionPlanner, AnOperatorOverTheBudgetRunsAlone) {
  OperatorGraph graph;
  const auto a = graph.addOperator({"A", 10, 0});
  const auto big = graph.addOperator({"BIG", 10, 64 * 1024});
  const auto c = graph.addOperator({"C", 10, 0});
  graph.addDependence(a, big, Dependence::Cta);
  graph.addDependence(big, c, Dependence::Cta);
  const FusionPlan plan = planFusion(graph, {63, 16 * 1024});
  ASSERT_EQ(plan.groups.size(), 3u);
  EXPECT_EQ(plan.groups[1].operators, (Ops{big}));
  EXPECT_EQ(plan.groups[1].end, GroupEnd::OverBudget);
  EXPECT_EQ(plan.groups[1].exceeded, ResourceSet(Resource::SharedMemory));
}

TEST(FusionPlanner, RejectsCyclesAndBadEdges) {
  OperatorGraph graph;
  const auto a = graph.addOperator({"A", 10, 0});
  const auto b = graph.addOperator({"B", 10, 0});
  graph.addDependence(a, b, Dependence::Thread);
  graph.addDependence(b, a, Dependence::Thread);
  EXPECT_THROW(planFusion(graph, kFermiBudget), std::invalid_argument);
  EXPECT_THROW(graph.addDependence(a, a, Dependence::Thread), std::invalid_argument);
  EXPECT_THROW(graph.addDependence(a, 7, Dependence::Thread), std::invalid_argument);
  EXPECT_THROW(graph.addOperator({"negative", -1, 0}), std::invalid_argument);
}

// The budget that keeps two 256-thread CTAs per H100 SM resident: 128
// registers (4096 per warp, 16 units, 4 warps per partition = 16 warps) and
// half of 228 KiB less the 1 KiB reserve.
TEST(FusionPlanner, BudgetFromTheOccupancyModel) {
  const DeviceLimits &h100 = deviceLimits(Architecture::Sm90);
  const FusionBudget budget = fusionBudgetFor(h100, 256, 2);
  EXPECT_EQ(budget.registersPerThread, 128);
  EXPECT_EQ(budget.sharedMemoryPerCta, 114 * 1024 - 1024);
  const Occupancy occupancy = computeOccupancy(h100, {budget.registersPerThread, budget.sharedMemoryPerCta, 256});
  EXPECT_EQ(occupancy.activeBlocksPerSm, 2);
  EXPECT_LT(computeOccupancy(h100, {budget.registersPerThread + 1, 0, 256}).activeBlocksPerSm, 2);
  EXPECT_LT(computeOccupancy(h100, {0, budget.sharedMemoryPerCta + 1, 256}).activeBlocksPerSm, 2);
  EXPECT_THROW(fusionBudgetFor(h100, 1024, 3), std::invalid_argument);
}

} // namespace
} // namespace mqx::kernelopt
