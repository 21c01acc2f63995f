// ClientRecords: the transitions of the node's client records
// (ipc/client_records.hpp), on a node state in this process's memory, and
// the refusal of any that does not apply.
#include "ipc/client_records.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace mqx::ipc {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr pid_t kPid = 5000;

class ClientRecordsTest : public ::testing::Test {
protected:
  ClientRecordsTest() : node_(std::make_unique<NodeState>()), records_(*node_) {
    node_->deviceCount = 2;
    node_->devices[0].capacity = 64 * kMiB;
    node_->devices[1].capacity = 32 * kMiB;
  }

  std::uint32_t claim(pid_t pid, ClientState role, std::uint32_t device = 0, std::string name = "q") {
    ClientRecords::Claim claim;
    claim.pid = pid;
    claim.role = role;
    claim.device = role == ClientState::Memory ? device : kAnyDevice;
    claim.querySlot = role == ClientState::Memory ? 7 : kNoSlot;
    claim.name = name;
    const auto slot = records_.claim(claim);
    EXPECT_TRUE(slot.has_value());
    return slot.value_or(kNoSlot);
  }
  const ClientRecord& at(std::uint32_t slot) { return node_->clients[slot]; }

  std::unique_ptr<NodeState> node_;
  ClientRecords records_;
};

TEST_F(ClientRecordsTest, AClaimTakesTheFirstFreeRecordEmptiedAndStampedWithTheNextArrival) {
  const std::uint32_t first = claim(kPid, ClientState::Waiting);
  const std::uint32_t second = claim(kPid + 1, ClientState::Memory, 1, std::string(200, 'x'));
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(second, 1u);
  EXPECT_EQ(at(first).state, ClientState::Waiting);
  EXPECT_EQ(at(first).device, kAnyDevice);
  EXPECT_EQ(at(first).querySlot, kNoSlot); // a query runs for no other query
  EXPECT_EQ(at(second).state, ClientState::Memory);
  EXPECT_EQ(at(second).device, 1u);
  EXPECT_EQ(at(second).querySlot, 7u);
  EXPECT_LT(at(first).arrival, at(second).arrival);
  EXPECT_EQ(std::strlen(at(second).name), kQueryNameBytes - 1); // truncated, NUL-terminated
  EXPECT_EQ(records_.ownedBy(first, kPid), &at(first));
  EXPECT_EQ(records_.ownedBy(first, kPid + 1), nullptr);
  EXPECT_EQ(records_.slotOf(at(second)), second);
}

TEST_F(ClientRecordsTest, AReusedRecordKeepsNothingOfItsPredecessor) {
  const std::uint32_t slot = claim(kPid, ClientState::Waiting);
  ASSERT_TRUE(records_.requestPlacement(slot, kPid, 4 * kMiB, 8 * kMiB));
  ASSERT_TRUE(records_.place(slot, 1));
  ASSERT_TRUE(records_.admit(slot, 1));
  ASSERT_TRUE(records_.observePeak(slot, 3 * kMiB));
  ASSERT_TRUE(records_.leave(slot, kPid));
  ASSERT_EQ(claim(kPid + 1, ClientState::Waiting), slot);
  const ClientRecord& record = at(slot);
  EXPECT_EQ(record.pid, kPid + 1);
  EXPECT_EQ(record.weightedDemand, 0u);
  EXPECT_EQ(record.peakDemand, 0u);
  EXPECT_EQ(record.observedPeak, 0u);
  EXPECT_EQ(record.admissionRequested, 0u);
  EXPECT_EQ(record.placeOnArrival, 0u);
  EXPECT_EQ(record.device, kAnyDevice);
}

TEST_F(ClientRecordsTest, AFullNodeRefusesAClaim) {
  for (std::uint32_t i = 0; i < kMaxClients; ++i)
    claim(kPid + static_cast<pid_t>(i), ClientState::Memory);
  ClientRecords::Claim one;
  one.pid = kPid - 1;
  EXPECT_FALSE(records_.claim(one).has_value());
  one.role = ClientState::Running; // nobody claims a record as admitted
  ASSERT_TRUE(records_.leave(0, kPid));
  EXPECT_FALSE(records_.claim(one).has_value());
}

TEST_F(ClientRecordsTest, AQueryAsksWithdrawsIsPlacedAndAdmitted) {
  const std::uint32_t slot = claim(kPid, ClientState::Waiting);
  EXPECT_TRUE(records_.declareDemand(slot, kPid, 2 * kMiB, 3 * kMiB));
  EXPECT_EQ(at(slot).admissionRequested, 0u); // declared, not asking yet
  EXPECT_FALSE(records_.admit(slot, 0));      // mqxd admits only records that ask
  EXPECT_EQ(at(slot).state, ClientState::Waiting);
  EXPECT_TRUE(records_.requestAdmission(slot, kPid, 4 * kMiB, 5 * kMiB));
  EXPECT_EQ(at(slot).weightedDemand, 4 * kMiB);
  EXPECT_EQ(at(slot).peakDemand, 5 * kMiB);
  EXPECT_EQ(at(slot).admissionRequested, 1u);
  EXPECT_TRUE(records_.withdrawAdmissionRequest(slot, kPid));
  EXPECT_EQ(at(slot).admissionRequested, 0u);
  EXPECT_FALSE(records_.place(slot, 0)); // not asking to be placed
  EXPECT_TRUE(records_.requestPlacement(slot, kPid, 4 * kMiB, 5 * kMiB));
  EXPECT_FALSE(records_.place(slot, 2)); // the node has two devices
  EXPECT_TRUE(records_.place(slot, 1));
  EXPECT_FALSE(records_.place(slot, 0)); // placed already
  EXPECT_EQ(at(slot).device, 1u);
  EXPECT_FALSE(records_.admit(slot, 5));
  EXPECT_TRUE(records_.admit(slot, 1));
  EXPECT_EQ(at(slot).state, ClientState::Running);
  EXPECT_EQ(at(slot).device, 1u);
  EXPECT_FALSE(records_.admit(slot, 1));                           // admitted once
  EXPECT_FALSE(records_.requestPlacement(slot, kPid, kMiB, kMiB)); // only a waiting query is placed
  EXPECT_TRUE(records_.requestAdmission(slot, kPid, kMiB, kMiB));  // a late ask of an admitted query is harmless
  EXPECT_EQ(at(slot).state, ClientState::Running);
}

TEST_F(ClientRecordsTest, NoTransitionOfAnotherProcessesRecordOrOfAFreedOne) {
  const std::uint32_t slot = claim(kPid, ClientState::Memory);
  const pid_t other = kPid + 1;
  EXPECT_FALSE(records_.declareDemand(slot, other, kMiB, kMiB));
  EXPECT_FALSE(records_.requestAdmission(slot, kPid, kMiB, kMiB)); // a memory client asks for nothing
  EXPECT_FALSE(records_.requestAdmission(slot, other, kMiB, kMiB));
  EXPECT_FALSE(records_.withdrawAdmissionRequest(slot, other));
  EXPECT_FALSE(records_.beat(slot, other));
  EXPECT_FALSE(records_.publishActivity(slot, other, ClientActivity{}));
  EXPECT_FALSE(records_.setBlockedOnMemory(slot, other, true));
  EXPECT_FALSE(records_.acquireBudget(slot, other, kMiB));
  EXPECT_FALSE(records_.releaseBudget(slot, other, kMiB));
  EXPECT_FALSE(records_.leave(slot, other));
  EXPECT_FALSE(records_.leave(kNoSlot, kPid));
  EXPECT_EQ(at(slot).state, ClientState::Memory);
  EXPECT_EQ(at(slot).budgetHeld, 0u);
  ASSERT_TRUE(records_.leave(slot, kPid));
  EXPECT_FALSE(records_.beat(slot, kPid)); // freed: its pid stays in it, the record is not its any more
  EXPECT_FALSE(records_.acquireBudget(slot, kPid, kMiB));
  EXPECT_FALSE(records_.leave(slot, kPid));
  EXPECT_EQ(records_.ownedBy(slot, kPid), nullptr);
}

TEST_F(ClientRecordsTest, BudgetComesFromTheRecordsDeviceAndGoesBackWithTheRecord) {
  const std::uint32_t a = claim(kPid, ClientState::Memory, 1);
  const std::uint32_t b = claim(kPid + 1, ClientState::Memory, 1);
  const std::uint32_t c = claim(kPid + 2, ClientState::Memory, 0);
  EXPECT_TRUE(records_.acquireBudget(a, kPid, 20 * kMiB));
  EXPECT_FALSE(records_.acquireBudget(b, kPid + 1, 13 * kMiB)); // device 1 has 32 MiB
  EXPECT_TRUE(records_.acquireBudget(b, kPid + 1, 12 * kMiB));
  EXPECT_TRUE(records_.acquireBudget(c, kPid + 2, 60 * kMiB)); // device 0's budget is apart
  EXPECT_EQ(node_->usedBytes(1), 32 * kMiB);
  EXPECT_EQ(node_->usedBytes(0), 60 * kMiB);
  EXPECT_TRUE(records_.releaseBudget(a, kPid, 50 * kMiB)); // never below zero
  EXPECT_EQ(at(a).budgetHeld, 0u);
  EXPECT_EQ(records_.leave(b, kPid + 1), 12 * kMiB);
  EXPECT_EQ(node_->usedBytes(1), 0u);
  EXPECT_EQ(records_.reclaimDead(c), 60 * kMiB);
  EXPECT_EQ(node_->usedBytes(0), 0u);
  EXPECT_EQ(node_->reclaimedBytes, 60 * kMiB); // only the dead one's bytes count as reclaimed
  EXPECT_EQ(node_->deadClients, 1u);
  EXPECT_EQ(at(c).state, ClientState::Free);
  EXPECT_EQ(records_.reclaimDead(c), 0u); // free already
  EXPECT_EQ(node_->deadClients, 1u);
}

TEST_F(ClientRecordsTest, AFreedRecordsActivityStaysInTheNodesTotals) {
  const std::uint32_t slot = claim(kPid, ClientState::Memory);
  ClientActivity activity;
  activity.launches = 10;
  activity.evictions = 3;
  activity.swapUsedBytes = kMiB; // a gauge: not kept
  ASSERT_TRUE(records_.publishActivity(slot, kPid, activity));
  EXPECT_EQ(at(slot).activity.launches, 10u);
  ASSERT_TRUE(records_.leave(slot, kPid));
  EXPECT_EQ(node_->retiredActivity.launches, 10u);
  EXPECT_EQ(node_->retiredActivity.evictions, 3u);
  EXPECT_EQ(node_->retiredActivity.swapUsedBytes, 0u);
  EXPECT_EQ(at(slot).activity.launches, 0u);
  const std::uint32_t query = claim(kPid + 1, ClientState::Waiting);
  EXPECT_FALSE(records_.publishActivity(query, kPid + 1, activity)); // a query has no manager
}

// A client publishes most of its counters as it leaves: they stay in its
// device's totals and, its launches, in its query's record, which mqxd reads
// for adaptive admission (daemon/query_work.hpp).
TEST_F(ClientRecordsTest, ALeavingMembersCountersGoToItsDeviceAndItsQuery) {
  const std::uint32_t query = claim(kPid, ClientState::Waiting);
  ASSERT_TRUE(records_.requestAdmission(query, kPid, kMiB, kMiB));
  ASSERT_TRUE(records_.admit(query, 1));
  auto member = [&](pid_t pid) {
    ClientRecords::Claim claim;
    claim.pid = pid;
    claim.role = ClientState::Memory;
    claim.device = 1;
    claim.querySlot = query;
    claim.name = "member";
    return records_.claim(claim).value_or(kNoSlot);
  };
  ClientActivity activity;
  activity.launches = 12;
  activity.evictions = 2;
  const std::uint32_t first = member(kPid + 1);
  ASSERT_TRUE(records_.publishActivity(first, kPid + 1, activity));
  ASSERT_TRUE(records_.leave(first, kPid + 1));
  EXPECT_EQ(node_->retiredOnDevice[1].launches, 12u);
  EXPECT_EQ(node_->retiredOnDevice[1].evictions, 2u);
  EXPECT_EQ(node_->retiredOnDevice[0].launches, 0u);
  EXPECT_EQ(at(query).memberLaunches, 12u);
  // The query's record keeps the count after it leaves, for mqxd to read
  // with its QueryFinished; a member leaving later adds nothing to it.
  const std::uint32_t late = member(kPid + 2);
  ASSERT_TRUE(records_.publishActivity(late, kPid + 2, activity));
  ASSERT_TRUE(records_.leave(query, kPid));
  ASSERT_TRUE(records_.leave(late, kPid + 2));
  EXPECT_EQ(at(query).memberLaunches, 12u);
  EXPECT_EQ(node_->retiredOnDevice[1].launches, 24u);
  // A new claim of the slot starts from nothing.
  EXPECT_EQ(claim(kPid + 3, ClientState::Waiting), query);
  EXPECT_EQ(at(query).memberLaunches, 0u);
}

TEST_F(ClientRecordsTest, LearnedDemandOnlyForAWaitingQueryThatDeclaredNone) {
  const std::uint32_t declared = claim(kPid, ClientState::Waiting);
  const std::uint32_t silent = claim(kPid + 1, ClientState::Waiting);
  ASSERT_TRUE(records_.declareDemand(declared, kPid, kMiB, 2 * kMiB));
  EXPECT_FALSE(records_.learnDemand(declared, 9 * kMiB));
  EXPECT_EQ(at(declared).weightedDemand, kMiB);
  EXPECT_TRUE(records_.learnDemand(silent, 9 * kMiB));
  EXPECT_EQ(at(silent).weightedDemand, 9 * kMiB);
  EXPECT_EQ(at(silent).peakDemand, 9 * kMiB);
  const std::uint32_t process = claim(kPid + 2, ClientState::Memory);
  EXPECT_FALSE(records_.learnDemand(process, 9 * kMiB));
  EXPECT_TRUE(records_.setDemand(process, 3 * kMiB, 4 * kMiB)); // its share of its query's demand
  EXPECT_EQ(at(process).peakDemand, 4 * kMiB);
  EXPECT_FALSE(records_.setDemand(kMaxClients - 1, kMiB, kMiB)); // a free record has no demand
}

TEST_F(ClientRecordsTest, ARunningQueryKeepsTheMostItsProcessesHeld) {
  const std::uint32_t slot = claim(kPid, ClientState::Waiting);
  EXPECT_FALSE(records_.observePeak(slot, kMiB)); // waiting: holds nothing yet
  ASSERT_TRUE(records_.requestAdmission(slot, kPid, kMiB, kMiB));
  ASSERT_TRUE(records_.admit(slot, 0));
  EXPECT_TRUE(records_.observePeak(slot, 5 * kMiB));
  EXPECT_TRUE(records_.observePeak(slot, 2 * kMiB));
  EXPECT_EQ(at(slot).observedPeak, 5 * kMiB);
}

TEST_F(ClientRecordsTest, HeartbeatAndWaitingForMemoryAreTheOwnersToSay) {
  const std::uint32_t slot = claim(kPid, ClientState::Memory);
  const std::uint64_t claimed = at(slot).heartbeatNs;
  EXPECT_GT(claimed, 0u);
  EXPECT_TRUE(records_.beat(slot, kPid));
  EXPECT_GE(at(slot).heartbeatNs, claimed);
  EXPECT_TRUE(records_.setBlockedOnMemory(slot, kPid, true));
  EXPECT_EQ(at(slot).blockedOnMemory, 1u);
  EXPECT_TRUE(records_.setBlockedOnMemory(slot, kPid, false));
  EXPECT_EQ(at(slot).blockedOnMemory, 0u);
}

} // namespace
} // namespace mqx::ipc
