// QueryWork: launches per run of each query name, adaptive admission's unit
// of throughput (docs/daemon.md, "Adaptive admission").
#include <gtest/gtest.h>

#include <string>

#include "query_work.hpp"

namespace mqx::daemon {
namespace {

TEST(QueryWork, ALaunchIsItsPartOfTheQuerysRun) {
  QueryWork work;
  work.finished("q1.1", 100);
  work.finished("q4.3", 400);
  EXPECT_DOUBLE_EQ(work.workOf("q1.1", 50), 0.5);
  EXPECT_DOUBLE_EQ(work.workOf("q4.3", 100), 0.25);
  // Two windows of the same progress in different mixes count the same.
  EXPECT_DOUBLE_EQ(work.workOf("q1.1", 100), work.workOf("q4.3", 400));
}

TEST(QueryWork, AnUnknownNameCountsAsTheMeanOfTheLearned) {
  QueryWork work;
  EXPECT_FALSE(work.learned());
  EXPECT_DOUBLE_EQ(work.workOf("new", 500), 500 / QueryWork::kNominalLaunchesPerRun);
  work.finished("a", 100);
  work.finished("b", 300);
  EXPECT_TRUE(work.learned());
  EXPECT_DOUBLE_EQ(work.workOf("new", 200), 1.0);
  // Its work is a guess until it finishes a run (DeviceCounters::guessedWork).
  EXPECT_TRUE(work.knows("a"));
  EXPECT_FALSE(work.knows("new"));
  EXPECT_DOUBLE_EQ(work.workOf("", 0), 0.0);
}

TEST(QueryWork, RunsOfOneNameAreAveraged) {
  QueryWork work(0.5);
  work.finished("q", 100);
  work.finished("q", 300);
  EXPECT_DOUBLE_EQ(work.workOf("q", 200), 1.0);
  // The mean of the learned names follows the update.
  work.finished("r", 200);
  EXPECT_DOUBLE_EQ(work.workOf("unknown", 200), 1.0);
}

TEST(QueryWork, ARunWithoutLaunchesTeachesNothing) {
  QueryWork work;
  work.finished("q", 0);
  EXPECT_FALSE(work.learned());
}

TEST(QueryWork, NamesBeyondTheBoundAreNotKept) {
  QueryWork work;
  for (std::size_t i = 0; i < QueryWork::kMaxNames + 10; ++i)
    work.finished("q" + std::to_string(i), 100 + i);
  // The first names are kept, later ones count as the mean.
  EXPECT_DOUBLE_EQ(work.workOf("q0", 100), 1.0);
  EXPECT_NE(work.workOf("q" + std::to_string(QueryWork::kMaxNames + 5), 100), 100.0 / (100 + QueryWork::kMaxNames + 5));
}

} // namespace
} // namespace mqx::daemon
