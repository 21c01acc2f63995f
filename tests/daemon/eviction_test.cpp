// Cross-process eviction on the simulated device: processes whose combined
// footprint is three times the node budget all finish with correct data,
// each evicting for the others on request; a request nobody can serve ends
// in out-of-memory after the timeout, never a hang.
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

class Oversubscribed : public NodeFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(Oversubscribed, EightProcessesAtThreeTimesTheBudgetFinishCorrectly) {
  environment_["MQX_DAEMON_CAPACITY"] = "24MiB";
  environment_["MQX_POLICY_REPLACEMENT"] = GetParam();
  startDaemon();
  // 8 processes x 3 regions x 3 MiB = 72 MiB, three times the budget; one
  // kernel needs one region (3 MiB) at a time.
  std::vector<std::unique_ptr<ChildProcess>> clients;
  for (int i = 0; i < 8; ++i)
    clients.push_back(client({"work", "3", std::to_string(3 << 20), "4", std::to_string(i + 1), "8"}));
  for (auto& process : clients) {
    EXPECT_TRUE(process->waitForLine("ok", 60s));
    EXPECT_EQ(process->wait(60s), 0);
  }
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
  EXPECT_EQ(segment_->state().deadClients, 0u) << "every client left the node itself";
  // They could only all finish by evicting for each other.
  EXPECT_GT(segment_->state().evictionRequestsServed, 0u);
  EXPECT_GT(segment_->state().bytesEvictedForOthers, 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, Oversubscribed, ::testing::Values("cdr", "lru", "mru", "lfu", "random"));

TEST_F(NodeFixture, EvictionRequestNobodyCanServeIsOutOfMemoryAfterTheTimeout) {
  environment_["MQX_DAEMON_CAPACITY"] = "16MiB";
  environment_["MQX_DAEMON_EVICTION_TIMEOUT_MS"] = "300";
  startDaemon();
  // The holder takes the whole budget outside any memory manager: it has
  // nothing to evict and answers every request with 0 bytes.
  auto holder = client({"hold-budget", std::to_string(16 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  const auto start = std::chrono::steady_clock::now();
  auto needy = client({"work", "1", std::to_string(2 << 20), "1", "5"});
  EXPECT_EQ(needy->wait(10s), 4) << "out of memory, reported";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

} // namespace
} // namespace mqx::test
