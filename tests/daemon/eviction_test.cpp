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

INSTANTIATE_TEST_SUITE_P(Policies, Oversubscribed, ::testing::Values("cdr", "lru", "mru", "lfu", "random", "adaptive"));

// Global victim selection (paper §6): the victim is chosen among every
// process's regions. A holds one cold, clean region; B needs memory for its
// third region while holding only hot (recently used, dirty) ones: A's region
// goes, not B's (B evicts nothing of its own).
class GlobalVictim : public NodeFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(GlobalVictim, AnotherProcessColdRegionIsEvictedNotTheRequesterHotOne) {
  environment_["MQX_DAEMON_CAPACITY"] = "24MiB";
  environment_["MQX_POLICY_REPLACEMENT"] = GetParam();
  startDaemon();
  auto cold = client({"cold", std::to_string(8 << 20), "1500", "7"});
  ASSERT_TRUE(cold->waitForLine("ready", 10s));
  // 3 x 6 MiB: with A's 8 MiB that is 26 MiB of a 24 MiB node.
  auto hot = client({"work", "3", std::to_string(6 << 20), "3", "9"});
  EXPECT_TRUE(hot->waitForLine("ok", 20s));
  EXPECT_TRUE(hot->waitForLine("evictions 0", 1s)) << "B evicted its own hot data";
  EXPECT_EQ(hot->wait(20s), 0);
  EXPECT_TRUE(cold->waitForLine("ok", 20s)) << "A's data survives the eviction";
  EXPECT_TRUE(cold->waitForLine("evictions 1", 1s)) << "A evicted its cold region for B";
  EXPECT_EQ(cold->wait(20s), 0);
  EXPECT_EQ(segment_->state().evictionRequestsServed, 1u);
}

INSTANTIATE_TEST_SUITE_P(Policies, GlobalVictim, ::testing::Values("cdr", "lru"));

// Deadlock avoidance: every process's single launch needs 0.6x of the node,
// so two of them cannot be backed at once. Each backs part of its region and
// waits for the others; the younger ones give back what they backed and let
// the oldest proceed, then the next. All finish with correct data.
class OversizedLaunches : public NodeFixture, public ::testing::WithParamInterface<int> {};

TEST_P(OversizedLaunches, AllCompleteOneAfterTheOther) {
  const int processes = GetParam();
  environment_["MQX_DAEMON_CAPACITY"] = "20MiB";
  // Small pages: backing a region takes long enough (192 pages) that the
  // processes, started together, back their regions at the same time.
  environment_["MQX_MEMORY_PAGE_SIZE"] = "64KiB";
  environment_["MQX_SIM_GRANULARITY"] = "64KiB";
  startDaemon();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<ChildProcess>> clients;
  for (int i = 0; i < processes; ++i)
    clients.push_back(
        client({"work", "1", std::to_string(12 << 20), "2", std::to_string(i + 3), std::to_string(processes)}));
  for (auto& process : clients) {
    EXPECT_TRUE(process->waitForLine("ok", 20s));
    EXPECT_EQ(process->wait(20s), 0);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
}

INSTANTIATE_TEST_SUITE_P(Processes, OversizedLaunches, ::testing::Values(2, 3));

// Launches over several regions, each process also holding an idle region:
// the older process's launch can only be backed with pages of regions the
// younger holds for its own pending launch (kept 2 x 3 MiB + new 10 MiB =
// 16 MiB each; before the launches both processes hold 9 MiB (kept + a
// 3 MiB idle region), so the free 2 MiB and both idle regions make 8 MiB of
// the 10 the older needs). Both start their launch at once (SIGUSR1 after
// both loaded): they collide, the younger yields, and while it waits for its
// turn it must evict for the older, which otherwise runs out of memory
// after daemon.eviction_timeout_ms (docs/daemon.md, "yielding").
TEST_F(NodeFixture, YieldingProcessEvictsItsRegionsForTheOlderOne) {
  environment_["MQX_DAEMON_CAPACITY"] = "20MiB";
  environment_["MQX_DAEMON_EVICTION_TIMEOUT_MS"] = "1000";
  // Small pages: backing the free part takes long enough that both launches
  // are inside their backing when they run out.
  environment_["MQX_MEMORY_PAGE_SIZE"] = "64KiB";
  environment_["MQX_SIM_GRANULARITY"] = "64KiB";
  startDaemon();
  const std::vector<std::string> args{"launch-set", "2", std::to_string(3 << 20), "1", std::to_string(10 << 20)};
  auto older = client({args[0], args[1], args[2], args[3], args[4], "11"});
  ASSERT_TRUE(older->waitForLine("loaded", 10s));
  auto younger = client({args[0], args[1], args[2], args[3], args[4], "12"});
  ASSERT_TRUE(younger->waitForLine("loaded", 10s));
  EXPECT_EQ(usedBytes(), std::uint64_t{18} << 20) << "both kept and idle sets resident before the launches";
  older->signal(SIGUSR1);
  younger->signal(SIGUSR1);
  EXPECT_TRUE(older->waitForLine("ok", 20s)) << "the older process's launch got its memory";
  EXPECT_TRUE(younger->waitForLine("ok", 20s));
  const auto olderYields = older->waitForCounter("yields", 1s);
  const auto youngerYields = younger->waitForCounter("yields", 1s);
  const auto youngerEvicted = younger->waitForCounter("yield evictions", 1s);
  EXPECT_EQ(olderYields, 0u) << "the oldest never yields";
  EXPECT_GE(youngerYields.value_or(0), 1u) << "the launches collided and the younger yielded";
  EXPECT_GT(youngerEvicted.value_or(0), 0u) << "the younger evicted for the older while it yielded";
  EXPECT_EQ(older->wait(20s), 0);
  EXPECT_EQ(younger->wait(20s), 0);
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
}

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
// The spare page (policy.spare_pages) on a node: a process alone on its
// device keeps one, as under mqx-run, and writes its victims back beside
// its loads; while another process holds any of the device's budget it
// keeps none (a spare held idle is budget the other needs).
TEST_F(NodeFixture, AProcessKeepsASparePageOnlyWhileNoOtherHoldsBudget) {
  environment_["MQX_DAEMON_CAPACITY"] = "8MiB";
  environment_["MQX_MEMORY_PAGE_SIZE"] = "256KiB"; // a page at most a sixteenth of the budget
  environment_["MQX_SIM_GRANULARITY"] = "64KiB";
  // Page victims: the victim that refills the spare frees a page, not a
  // whole region (ResidencyManager::refillSpare).
  environment_["MQX_POLICY_EVICTION_GRANULARITY"] = "page";
  startDaemon();
  auto alone = client({"work", "3", std::to_string(6 << 20), "3", "23"});
  EXPECT_TRUE(alone->waitForLine("ok", 20s));
  EXPECT_GT(alone->waitForCounter("evictions", 1s).value_or(0), 0u) << "the work went beyond the budget";
  EXPECT_GT(alone->waitForCounter("evictions beside loads", 1s).value_or(0), 0u) << "alone, it kept no spare";
  EXPECT_EQ(alone->wait(20s), 0);

  auto holder = client({"hold-budget", std::to_string(1 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  auto beside = client({"work", "3", std::to_string(6 << 20), "3", "24"});
  EXPECT_TRUE(beside->waitForLine("ok", 20s)) << "the bytes came back right";
  EXPECT_GT(beside->waitForCounter("evictions", 1s).value_or(0), 0u);
  EXPECT_EQ(beside->waitForCounter("evictions beside loads", 1s).value_or(1), 0u)
      << "a spare was kept while another process held budget";
  EXPECT_EQ(beside->wait(20s), 0);
}

} // namespace mqx::test

namespace mqx::test {

// mqxd's pool of host blocks (daemon.host_block_pool; docs/daemon.md, "Lent
// host blocks"): a client that evicts maps the pool's blocks under its
// evicted pages instead of creating its own, every byte comes back, and a
// client on a node without a pool ("auto" on the simulated device) creates
// its own as before.
TEST_F(NodeFixture, AClientThatEvictsMapsHostBlocksLentByTheNode) {
  environment_["MQX_DAEMON_CAPACITY"] = "8MiB";
  environment_["MQX_MEMORY_PINNED_SWAP"] = "true"; // host blocks map under evicted pages
  environment_["MQX_DAEMON_HOST_BLOCK_POOL"] = "64MiB";
  // The clients are the simulated device's: so is the pool, also on a GPU
  // host (there mqxd would make it with CUDA, for libmqx.so's processes).
  environment_["MQX_BACKEND_KIND"] = "sim";
  startDaemon();
  auto lent = client({"work", "3", std::to_string(6 << 20), "3", "21"});
  EXPECT_TRUE(lent->waitForLine("ok", 20s)) << "the bytes came back right";
  EXPECT_GT(lent->waitForCounter("evictions", 1s).value_or(0), 0u) << "the work went beyond the budget";
  EXPECT_GT(lent->waitForCounter("lent host block bytes", 1s).value_or(0), 0u)
      << "the evicted pages mapped lent blocks";
  EXPECT_EQ(lent->wait(20s), 0);
  stopDaemon();
  environment_["MQX_DAEMON_HOST_BLOCK_POOL"] = "auto"; // the default: a GPU node's only
  startDaemon();
  auto alone = client({"work", "3", std::to_string(6 << 20), "3", "22"});
  EXPECT_TRUE(alone->waitForLine("ok", 20s));
  EXPECT_EQ(alone->waitForCounter("lent host block bytes", 1s).value_or(1), 0u)
      << "auto on the simulated device: no pool, no lent blocks";
  EXPECT_EQ(alone->wait(20s), 0);
}

} // namespace mqx::test
