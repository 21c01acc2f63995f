// UndeclaredDemand (docs/daemon.md, "Queries that declare nothing") and the
// default query name mqx-run learns demand under.
#include <gtest/gtest.h>

#include "query_name.hpp"
#include "undeclared_demand.hpp"

namespace mqx::daemon {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kDevice = 80 * kGiB;

TEST(UndeclaredDemand, CountsTheWholeDeviceUntilWhatItHoldsStopsGrowing) {
  UndeclaredDemand demand(UndeclaredOptions{2.0, 10.0});
  demand.started(3, "python3 train.py", 0.0);
  EXPECT_EQ(demand.runningDemand(3, kDevice, 0.0), kDevice);
  // It builds its working set: 10, 30, 44 GiB over 3 s.
  demand.observe(3, 10 * kGiB, 1.0);
  demand.observe(3, 30 * kGiB, 2.0);
  demand.observe(3, 44 * kGiB, 3.0);
  EXPECT_EQ(demand.runningDemand(3, kDevice, 4.9), kDevice) << "grew 1.9 s ago";
  // Small changes (pages loaded and evicted) do not restart the clock.
  demand.observe(3, 44 * kGiB + (16u << 20), 4.0);
  demand.observe(3, 43 * kGiB, 4.5);
  EXPECT_EQ(demand.runningDemand(3, kDevice, 5.0), 44 * kGiB + (16u << 20));
  EXPECT_TRUE(demand.settled(3, 5.0));
  // A real step up is growth again.
  demand.observe(3, 60 * kGiB, 6.0);
  EXPECT_EQ(demand.runningDemand(3, kDevice, 7.0), kDevice);
  EXPECT_EQ(demand.runningDemand(3, kDevice, 8.0), 60 * kGiB);
}

TEST(UndeclaredDemand, AQueryThatHoldsNothingIsMeasuredAtNothingAfterTheIdleTime) {
  UndeclaredDemand demand(UndeclaredOptions{2.0, 10.0});
  demand.started(0, "sleep", 0.0);
  for (double t = 0.1; t < 10.0; t += 0.1)
    demand.observe(0, 0, t);
  EXPECT_EQ(demand.runningDemand(0, kDevice, 9.9), kDevice);
  EXPECT_EQ(demand.runningDemand(0, kDevice, 10.0), 0u);
}

TEST(UndeclaredDemand, AWaitingQueryIsEstimatedByASettledRunningOneOfItsName) {
  UndeclaredDemand demand(UndeclaredOptions{2.0, 10.0});
  demand.started(1, "python3 a.py", 0.0);
  demand.started(2, "python3 b.py", 0.0);
  demand.observe(1, 40 * kGiB, 1.0);
  demand.observe(2, 5 * kGiB, 1.0);
  EXPECT_FALSE(demand.estimateFor("python3 a.py", 2.0).has_value()) << "not settled yet";
  EXPECT_EQ(demand.estimateFor("python3 a.py", 3.0), 40 * kGiB);
  EXPECT_EQ(demand.estimateFor("python3 b.py", 3.0), 5 * kGiB);
  EXPECT_FALSE(demand.estimateFor("python3 c.py", 3.0).has_value());
  demand.ended(1);
  EXPECT_FALSE(demand.estimateFor("python3 a.py", 3.0).has_value());
  EXPECT_FALSE(demand.runningDemand(1, kDevice, 3.0).has_value()) << "not measured here once ended";
}

TEST(QueryName, AProgramIsNamedByItsFileAndAnInterpreterByItsScript) {
  EXPECT_EQ(defaultQueryName({"/usr/bin/ssb-q1.1", "--sf", "1"}), "ssb-q1.1");
  EXPECT_EQ(defaultQueryName({"python3", "-u", "/home/a/train.py", "--epochs", "2"}), "python3 train.py");
  EXPECT_EQ(defaultQueryName({"/usr/bin/python3.12", "-m", "torch.distributed.run", "x.py"}),
            "python3.12 -m torch.distributed.run");
  EXPECT_EQ(defaultQueryName({"python3", "-c", "import torch"}), "python3");
  EXPECT_EQ(defaultQueryName({"bash", "job.sh"}), "bash job.sh");
  EXPECT_EQ(defaultQueryName({"pythonista"}), "pythonista");
}

} // namespace
} // namespace mqx::daemon
