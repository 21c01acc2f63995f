// WeightedDemand (common/weighted_demand.hpp) against the exact weighted
// mean computed in integers, on seeded random operator lists, and at the
// extremes where the old sums overflowed (paper §5: m = Σ tᵢmᵢ / Σ tᵢ).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "common/weighted_demand.hpp"

namespace mqx {
namespace {

TEST(WeightedDemand, IsTheTimeWeightedMeanWithinItsBounds) {
  WeightedDemand demand;
  demand.add(1.0, 100);
  demand.add(3.0, 200);
  EXPECT_EQ(demand.weighted(), 175U); // (100 + 600) / 4
  EXPECT_EQ(demand.peak(), 200U);
  WeightedDemand empty;
  EXPECT_EQ(empty.weighted(), 0U);
  WeightedDemand untimed;
  untimed.add(0.0, 50);
  untimed.add(-1.0, 70);
  EXPECT_EQ(untimed.weighted(), 70U) << "no time measured: the peak";
}

TEST(WeightedDemand, EqualsTheExactMeanOnSeededRandomOperators) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("WeightedDemand random operators: seed %u\n", seed);
  std::mt19937_64 random(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    WeightedDemand demand;
    // Integer times and sizes, so that the exact mean is a fraction of two
    // 128-bit sums.
    unsigned __int128 timeSum = 0, weightedSum = 0;
    const int operators = 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < operators; ++i) {
      const std::uint64_t time = 1 + random() % 1000;
      const std::uint64_t bytes = random() % (std::uint64_t{1} << 40);
      demand.add(static_cast<double>(time), bytes);
      timeSum += time;
      weightedSum += static_cast<unsigned __int128>(time) * bytes;
    }
    const auto exact = static_cast<double>(weightedSum) / static_cast<double>(timeSum);
    EXPECT_NEAR(static_cast<double>(demand.weighted()), exact, 1.0 + exact * 1e-12) << "trial " << trial;
  }
}

TEST(WeightedDemand, ExtremeTimesAndSizesStayWithinMinAndPeak) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  WeightedDemand demand;
  demand.add(1e308, kMax);
  demand.add(1e308, kMax - 1);
  demand.add(std::numeric_limits<double>::min(), 1);
  EXPECT_LE(demand.weighted(), kMax);
  EXPECT_GE(demand.weighted(), 1U);
  EXPECT_EQ(demand.peak(), kMax);
  WeightedDemand infinite;
  infinite.add(std::numeric_limits<double>::infinity(), 10);
  infinite.add(std::numeric_limits<double>::quiet_NaN(), 20);
  EXPECT_EQ(infinite.weighted(), 20U) << "no finite time: the peak";
}

} // namespace
} // namespace mqx
