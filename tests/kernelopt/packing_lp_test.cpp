#include "kernelopt/packing_lp.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace mqx::kernelopt {
namespace {

using Patterns = std::vector<std::vector<std::size_t>>;

// Primal and dual feasibility and equal objectives prove optimality.
void expectOptimal(std::size_t items, const Patterns &patterns, const CoveringLpSolution &lp) {
  ASSERT_EQ(lp.prices.size(), items);
  ASSERT_EQ(lp.usage.size(), patterns.size());
  std::vector<double> cover(items, 0.0);
  for (std::size_t j = 0; j < patterns.size(); ++j) {
    EXPECT_GE(lp.usage[j], -1e-9);
    double price = 0.0;
    for (std::size_t item : patterns[j]) {
      cover[item] += lp.usage[j];
      price += lp.prices[item];
    }
    EXPECT_LE(price, 1.0 + 1e-9) << "pattern " << j;
  }
  for (std::size_t i = 0; i < items; ++i) {
    EXPECT_GE(cover[i], 1.0 - 1e-9) << "item " << i;
    EXPECT_GE(lp.prices[i], -1e-9);
  }
  EXPECT_NEAR(std::accumulate(lp.prices.begin(), lp.prices.end(), 0.0), lp.value, 1e-9);
  EXPECT_NEAR(std::accumulate(lp.usage.begin(), lp.usage.end(), 0.0), lp.value, 1e-9);
}

// Three kernels, any two fit together: the LP takes each pair half a time
// (1.5 batches), while any integer cover needs 2.
TEST(CoveringLp, OddCycleHasAFractionalOptimum) {
  const Patterns patterns{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}};
  const CoveringLpSolution lp = solveCoveringLp(3, patterns);
  EXPECT_NEAR(lp.value, 1.5, 1e-9);
  for (double price : lp.prices)
    EXPECT_NEAR(price, 0.5, 1e-9);
  expectOptimal(3, patterns, lp);
}

TEST(CoveringLp, SingletonsOnlyNeedOneBatchEach) {
  const Patterns patterns{{0}, {1}, {2}, {3}};
  const CoveringLpSolution lp = solveCoveringLp(4, patterns);
  EXPECT_NEAR(lp.value, 4.0, 1e-9);
  expectOptimal(4, patterns, lp);
}

TEST(CoveringLp, RandomInstancesAreSolvedToOptimality) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::size_t items = 2 + seed % 12;
    Patterns patterns;
    for (std::size_t i = 0; i < items; ++i)
      patterns.push_back({i});
    const int extra = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int p = 0; p < extra; ++p) {
      std::vector<std::size_t> pattern;
      for (std::size_t i = 0; i < items; ++i)
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
          pattern.push_back(i);
      if (!pattern.empty())
        patterns.push_back(pattern);
    }
    expectOptimal(items, patterns, solveCoveringLp(items, patterns));
  }
}

TEST(CoveringLp, RejectsUncoveredItems) {
  const Patterns patterns{{0}};
  EXPECT_THROW(solveCoveringLp(2, patterns), std::invalid_argument);
  const Patterns outOfRange{{0}, {1}, {2}};
  EXPECT_THROW(solveCoveringLp(2, outOfRange), std::invalid_argument);
}

} // namespace
} // namespace mqx::kernelopt
