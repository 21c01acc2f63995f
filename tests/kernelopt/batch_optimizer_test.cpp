#include "brute_force.hpp"
#include "random_instances.hpp"

#include "kernelopt/architectures.hpp"
#include "kernelopt/batch_optimizer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace mqx::kernelopt {
namespace {

using testing::describe;

const DeviceLimits &h100() { return deviceLimits(Architecture::Sm90); }

KernelDemand onEverySm(long long perSm, int registers = 16, int sharedMemory = 0) {
  return {perSm * 132, registers, sharedMemory, 0};
}

// Every placeable kernel in exactly one batch, every batch feasible.
void expectValidPlan(const std::vector<KernelDemand> &kernels, const BatchPlan &plan) {
  std::vector<int> seen(kernels.size(), 0);
  for (const Batch &batch : plan.batches) {
    EXPECT_TRUE(batch.solution.feasible);
    EXPECT_EQ(batch.solution.launches.size(), batch.kernels.size());
    EXPECT_TRUE(std::is_sorted(batch.kernels.begin(), batch.kernels.end()));
    for (std::size_t kernel : batch.kernels)
      ++seen[kernel];
  }
  for (std::size_t kernel : plan.unplaceable)
    ++seen[kernel];
  for (std::size_t i = 0; i < kernels.size(); ++i)
    EXPECT_EQ(seen[i], 1) << "kernel " << i;
  EXPECT_LE(plan.lowerBound, plan.batches.size());
}

// The exact solver against every set partition, on random small instances.
TEST(BatchOptimizer, ExactSolverMatchesPartitionBruteForce) {
  int multiBatch = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    const DeviceLimits limits = testing::randomToyDevice(rng);
    const std::size_t count = 2 + seed % 5;
    const auto kernels = testing::randomKernels(rng, limits, count, std::uniform_real_distribution<>(0.5, 2.5)(rng));
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + describe(limits) + "\n" + describe(kernels));
    BatchOptimizer optimizer(limits);
    const BatchPlan plan = optimizer.plan(kernels);
    ASSERT_EQ(plan.method, BatchMethod::Exact);
    expectValidPlan(kernels, plan);
    EXPECT_TRUE(plan.provenOptimal);
    if (!plan.unplaceable.empty())
      continue;
    const auto expected = testing::bruteForceBatchCount(limits, kernels);
    ASSERT_TRUE(expected.has_value());
    EXPECT_EQ(plan.batches.size(), *expected);
    if (*expected > 1)
      ++multiBatch;
    if (::testing::Test::HasFailure())
      break;
  }
  EXPECT_GT(multiBatch, 100);
}

// Column generation is a heuristic: never fewer batches than the optimum
// (that would be an invalid plan), and on these instances at most one more.
TEST(BatchOptimizer, ColumnGenerationNeverBeatsExactAndStaysClose) {
  int equal = 0, total = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    std::mt19937_64 rng(seed * 31);
    const DeviceLimits limits = testing::randomToyDevice(rng);
    const std::size_t count = 3 + seed % 8;
    const auto kernels = testing::randomKernels(rng, limits, count, std::uniform_real_distribution<>(1.0, 3.0)(rng));
    SCOPED_TRACE("seed " + std::to_string(seed * 31) + "\n" + describe(limits) + "\n" + describe(kernels));
    BatchOptimizer optimizer(limits);
    const BatchPlan exact = optimizer.planExact(kernels);
    const BatchPlan heuristic = optimizer.planColumnGeneration(kernels);
    expectValidPlan(kernels, heuristic);
    EXPECT_EQ(heuristic.unplaceable, exact.unplaceable);
    EXPECT_GE(heuristic.batches.size(), exact.batches.size());
    EXPECT_LE(heuristic.batches.size(), exact.batches.size() + 1);
    EXPECT_LE(heuristic.lowerBound, exact.batches.size());
    equal += heuristic.batches.size() == exact.batches.size();
    ++total;
  }
  EXPECT_GE(equal * 10, total * 9) << equal << " of " << total << " optimal";
}

// Seven kernels of 32 warps each: two per SM, so four batches, which the
// warp bound proves optimal.
TEST(BatchOptimizer, WarpBoundProvesAPlanOptimal) {
  const std::vector<KernelDemand> kernels(7, onEverySm(1024));
  BatchOptimizer optimizer(h100());
  for (const BatchPlan &plan : {optimizer.planExact(kernels), optimizer.planColumnGeneration(kernels)}) {
    expectValidPlan(kernels, plan);
    EXPECT_EQ(plan.batches.size(), 4u);
    EXPECT_EQ(plan.lowerBound, 4u);
    EXPECT_TRUE(plan.provenOptimal);
  }
}

TEST(BatchOptimizer, KernelsThatFitNowhereAreSetAside) {
  const std::vector<KernelDemand> kernels{onEverySm(512), onEverySm(4096), onEverySm(512), onEverySm(256, 300)};
  BatchOptimizer optimizer(h100());
  const BatchPlan plan = optimizer.plan(kernels);
  expectValidPlan(kernels, plan);
  EXPECT_EQ(plan.unplaceable, (std::vector<std::size_t>{1, 3}));
  ASSERT_EQ(plan.batches.size(), 1u);
  EXPECT_EQ(plan.batches[0].kernels, (std::vector<std::size_t>{0, 2}));
}

// Beyond the exact limit plan() switches to column generation; 40 H100
// kernels with mixed demands still get a valid plan near the bound.
TEST(BatchOptimizer, LargeInstancesUseColumnGeneration) {
  std::mt19937_64 rng(2024);
  std::vector<KernelDemand> kernels;
  for (int i = 0; i < 40; ++i)
    kernels.push_back(onEverySm(std::uniform_int_distribution<int>(64, 1100)(rng),
                                std::uniform_int_distribution<int>(16, 96)(rng),
                                std::uniform_int_distribution<int>(0, 48 * 1024)(rng)));
  BatchOptimizer optimizer(h100());
  const BatchPlan plan = optimizer.plan(kernels);
  EXPECT_EQ(plan.method, BatchMethod::ColumnGeneration);
  expectValidPlan(kernels, plan);
  EXPECT_GE(plan.lowerBound, 1u);
  EXPECT_LE(plan.batches.size(), plan.lowerBound + 2);
}

TEST(BatchOptimizer, EmptyInputHasNoBatches) {
  BatchOptimizer optimizer(h100());
  const BatchPlan plan = optimizer.plan({});
  EXPECT_TRUE(plan.batches.empty());
  EXPECT_TRUE(plan.provenOptimal);
}

} // namespace
} // namespace mqx::kernelopt
