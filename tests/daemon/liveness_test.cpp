// Clients that die: the budget comes back within one second and nobody
// hangs, even when the dead client held the node's lock.
#include <sys/wait.h>

#include "ipc/node_membership.hpp"
#include "ipc/shared_device_budget.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

using Liveness = NodeFixture;

TEST_F(Liveness, BudgetOfAKilledClientIsReclaimedWithinOneSecond) {
  startDaemon();
  auto holder = client({"hold-budget", std::to_string(20 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  EXPECT_EQ(usedBytes(), std::uint64_t{20} << 20);
  holder->signal(SIGKILL);
  const auto reclaimed = waitUntilBudgetFree(1000ms);
  ASSERT_TRUE(reclaimed) << "still used: " << usedBytes();
  EXPECT_GE(segment_->state().reclaimedBytes, std::uint64_t{20} << 20);
}

TEST_F(Liveness, ClientKilledHoldingTheLockLeavesOthersFinishing) {
  startDaemon();
  auto holder = client({"hold-lock", std::to_string(16 << 20)});
  ASSERT_TRUE(holder->waitForLine("locked", 10s));
  // These need the lock for every budget operation: they block until the
  // holder dies, then recover the lock and finish.
  auto first = client({"work", "2", std::to_string(3 << 20), "3", "11"});
  auto second = client({"work", "2", std::to_string(3 << 20), "3", "12"});
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(first->wait(0ms)) << "the lock is held: nobody can have finished";
  holder->signal(SIGKILL);
  EXPECT_EQ(holder->wait(5s), 128 + SIGKILL);
  EXPECT_EQ(first->wait(20s), 0);
  EXPECT_EQ(second->wait(20s), 0);
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
  EXPECT_GE(segment_->state().deadClients, 1u);
}

// A client stopped (SIGSTOP) holding the node's lock: a joined client's
// heartbeat blocked on it for ever, and so did its exit (tests/faults'
// AStoppedHolderIsNamedOnce... hung CI once). Now the waiter names the
// holder with the command that resumes it, leaves the node and finishes
// alone, correct.
TEST_F(Liveness, AClientStoppedHoldingTheLockIsNamedAndLeftBehind) {
  startDaemon();
  auto worker = client({"work-hold", "2", std::to_string(3 << 20), "3", "13", "2500"}, {}, true);
  ASSERT_TRUE(worker->waitForLine("ready", 20s));
  auto holder = client({"hold-lock", std::to_string(4 << 20)});
  ASSERT_TRUE(holder->waitForLine("locked", 10s));
  holder->signal(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  const auto status = worker->wait(20s);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string log = worker->readRest(1s);
  holder->signal(SIGKILL);
  holder->signal(SIGCONT);
  ASSERT_TRUE(status.has_value()) << "the worker hangs on the stopped holder's lock; " << log;
  EXPECT_EQ(*status, 0) << log;
  EXPECT_LT(took, 8s) << log;
  const std::string pid = std::to_string(holder->pid());
  EXPECT_NE(log.find("process " + pid + " is stopped holding the node's lock (kill -CONT " + pid +
                     " resumes it): leaving the node; this process runs alone"),
            std::string::npos)
      << log;
  EXPECT_EQ(holder->wait(5s), 128 + SIGKILL);
}

TEST_F(Liveness, ForkedChildOfAClientNeitherUsesNorFreesItsRecord) {
  startDaemon();
  auto member = ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Memory, "parent");
  ASSERT_NE(member, nullptr);
  std::shared_ptr<DeviceBudget> budget = std::make_shared<ipc::SharedDeviceBudget>(member);
  ASSERT_TRUE(budget->tryAcquire(1 << 20));
  const pid_t child = fork();
  if (child == 0) {
    // What libmqx's exit handler does in a child that exits: nothing of the
    // parent's may move.
    const bool took = budget->tryAcquire(1 << 20);
    member->leave();
    _exit(took ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child took budget on the parent's record";
  {
    ipc::RobustLock lock(segment_->state().lock);
    const auto& record = segment_->state().clients[member->slot()];
    EXPECT_EQ(record.state, ipc::ClientState::Memory);
    EXPECT_EQ(record.budgetHeld, std::uint64_t{1} << 20);
  }
  budget->release(1 << 20);
  budget.reset();
  member.reset();
  EXPECT_EQ(usedBytes(), 0u);
}

// A client killed at some point of an oversubscribed run (holding pages,
// evicting for another, waiting for an eviction, holding the lock): the
// others finish with correct data and the budget comes back.
class KilledMidRun : public NodeFixture, public ::testing::WithParamInterface<int> {};

TEST_P(KilledMidRun, OthersFinishAndTheBudgetIsReclaimed) {
  environment_["MQX_DAEMON_CAPACITY"] = "18MiB";
  startDaemon();
  std::vector<std::unique_ptr<ChildProcess>> clients;
  for (int i = 0; i < 6; ++i)
    clients.push_back(client({"work", "3", std::to_string(3 << 20), "6", std::to_string(i + 1), "6"}));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (usedBytes() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(GetParam()));
  clients[0]->signal(SIGKILL);
  EXPECT_EQ(clients[0]->wait(5s), 128 + SIGKILL);
  for (std::size_t i = 1; i < clients.size(); ++i)
    EXPECT_EQ(clients[i]->wait(30s), 0) << "client " << i;
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
  EXPECT_EQ(segment_->state().deadClients, 1u);
}

INSTANTIATE_TEST_SUITE_P(KillDelaysMs, KilledMidRun, ::testing::Values(0, 15, 40));

} // namespace
} // namespace mqx::test
