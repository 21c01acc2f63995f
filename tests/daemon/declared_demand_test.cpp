// DeclaredDemands (daemon/declared_demand.hpp): per slot and arrival, whether
// a query's demand was declared, so that launch footprints do not replace it.
#include <gtest/gtest.h>

#include "declared_demand.hpp"

namespace mqx::daemon {
namespace {

TEST(DeclaredDemands, ARequestWithADemandIsDeclaredAndOneWithoutIsNot) {
  DeclaredDemands demands;
  demands.requested(3, 10, true);
  demands.requested(4, 11, false);
  EXPECT_TRUE(demands.isDeclared(3, 10));
  EXPECT_FALSE(demands.isDeclared(4, 11)) << "a demand mqxd learns afterwards is not a declaration";
  EXPECT_FALSE(demands.isDeclared(5, 12)) << "a slot never seen";
}

TEST(DeclaredDemands, OnlyTheFirstSightOfAnArrivalCounts) {
  DeclaredDemands demands;
  // Seen without a demand; mqxd learns one, and the next pass sees it
  // non-zero: still not declared.
  demands.requested(3, 10, false);
  demands.requested(3, 10, true);
  EXPECT_FALSE(demands.isDeclared(3, 10));
  // A process of the query declares operators (the advice API).
  demands.declared(3, 10);
  EXPECT_TRUE(demands.isDeclared(3, 10));
}

TEST(DeclaredDemands, ANewArrivalInTheSlotStartsOver) {
  DeclaredDemands demands;
  demands.requested(3, 10, true);
  EXPECT_FALSE(demands.isDeclared(3, 11)) << "the slot's next query is another request";
  demands.requested(3, 11, false);
  EXPECT_FALSE(demands.isDeclared(3, 11));
  EXPECT_FALSE(demands.isDeclared(3, 10)) << "the previous query's entry is gone with it";
}

} // namespace
} // namespace mqx::daemon
