// PeerEviction on its own (docs/daemon.md; paper §6): alone it costs nothing
// and answers "nothing"; with a node (a PeerRegions standing in for mqxd's
// segment) it publishes, collects, asks owners, serves requests with the
// local victims it is given, and yields to older processes.
#include "core/peer_eviction.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace mqx {
namespace {

using namespace std::chrono_literals;

// The local residency as another process's request sees it: regions and
// the bytes each eviction frees, in the policy's order.
class FakeVictims final : public LocalVictims {
public:
  std::size_t evictRegionNow(RegionId region) override {
    calls.push_back(region);
    return region == evictableRegion ? regionBytes : 0;
  }
  std::size_t evictBestNow() override {
    calls.push_back(0);
    if (best.empty()) return 0;
    const std::size_t freed = best.front();
    best.pop_front();
    return freed;
  }
  std::size_t giveSpare() override { return std::exchange(spare, 0); }
  RegionId evictableRegion = 0;
  std::size_t regionBytes = 0;
  std::size_t spare = 0;        // budget held spare
  std::deque<std::size_t> best; // bytes of each victim the policy would choose
  std::vector<RegionId> calls;  // 0: evictBestNow
};

class FakeNode final : public PeerRegions {
public:
  std::uint64_t tick() override { return ++clock; }
  void publish(std::span<const PublishedInputs> regions) override {
    published.emplace_back();
    for (const PublishedInputs& region : regions)
      published.back().push_back(region.region);
  }
  void collect(std::vector<PeerCandidate>* out) override { *out = candidates; }
  std::size_t evictAt(const PeerCandidate& candidate, std::size_t bytes) override {
    waitingWhileAsked = owner != nullptr && owner->waitingForOtherProcesses();
    return candidate.region == freesRegion ? bytes : 0;
  }
  void observeLaunchFootprint(std::size_t bytes) override { footprint = bytes; }
  bool mustYield() override { return yieldsLeft.load() > 0 && yieldsLeft.fetch_sub(1) > 0; }
  PeerReclaim reclaim(std::size_t) override { return reclaimAnswer; }
  std::uint64_t progress() override { return progressing ? ++fingerprint : fingerprint; }
  std::string describeNode() override { return "a fake node"; }

  const PeerEviction* owner = nullptr;
  std::uint64_t clock = 100;
  std::vector<std::vector<RegionId>> published;
  std::vector<PeerCandidate> candidates;
  RegionId freesRegion = 0;
  bool waitingWhileAsked = false;
  std::size_t footprint = 0;
  std::atomic<int> yieldsLeft{0};
  PeerReclaim reclaimAnswer = PeerReclaim::NobodyElseHolds;
  bool progressing = true;
  std::uint64_t fingerprint = 0;
};

class NodeBudget final : public DeviceBudget {
public:
  explicit NodeBudget(PeerRegions* node) : node_(node) {}
  bool tryAcquire(std::size_t) override { return false; }
  void release(std::size_t) override {}
  std::size_t used() const override { return 0; }
  std::size_t limit() const override { return 0; }
  PeerRegions* peers() override { return node_; }

private:
  PeerRegions* node_;
};

Region regionOf(RegionId id) {
  Region region;
  region.id = id;
  region.pages.resize(2);
  return region;
}

TEST(PeerEvictionAlone, CostsNothingAndAnswersNothing) {
  LocalDeviceBudget budget(1 << 20);
  Statistics statistics;
  PeerEviction peers(10ms, budget, statistics, nullptr);
  EXPECT_FALSE(peers.sharesNode());
  EXPECT_EQ(peers.tick(), 1U); // the process's own clock
  EXPECT_EQ(peers.tick(), 2U);
  Region region = regionOf(1);
  peers.publish(region);
  std::vector<PeerCandidate> collected;
  peers.collect({}, &collected);
  EXPECT_TRUE(collected.empty());
  EXPECT_EQ(peers.reclaimElsewhere(4096), PeerReclaim::NobodyElseHolds);
  EXPECT_FALSE(peers.mustYield());
  EXPECT_FALSE(peers.waitingForOtherProcesses());
}

// A process alone on its budget, serving another's request from `local`:
// region 7 frees 100 bytes.
class PeerEvictionServing : public ::testing::Test {
protected:
  PeerEvictionServing() {
    local.evictableRegion = 7;
    local.regionBytes = 100;
  }
  LocalDeviceBudget budget{1 << 20};
  Statistics statistics;
  PeerEviction peers{10ms, budget, statistics, nullptr};
  FakeVictims local;
};

TEST_F(PeerEvictionServing, PreferredRegionFirstThenThePolicysChoices) {
  local.best = {50, 50, 50};
  EXPECT_EQ(peers.evictForOtherProcess(180, 7, local), 200U); // 100, then 50 and 50
  EXPECT_EQ(local.calls, (std::vector<RegionId>{7, 0, 0}));

  local.calls.clear();
  EXPECT_EQ(peers.evictForOtherProcess(500, 0, local), 50U); // nothing left after one more
  EXPECT_EQ(local.calls, (std::vector<RegionId>{0, 0}));
}

TEST_F(PeerEvictionServing, TheSpareBeforeEvictingAnything) {
  local.best = {50};
  local.spare = 64;
  EXPECT_EQ(peers.evictForOtherProcess(64, 7, local), 64U); // the spare was enough
  EXPECT_TRUE(local.calls.empty()) << "a region was evicted although the spare sufficed";
  EXPECT_EQ(local.spare, 0U);

  local.spare = 64;
  EXPECT_EQ(peers.evictForOtherProcess(150, 7, local), 164U); // the spare, then the region
  EXPECT_EQ(local.calls, (std::vector<RegionId>{7}));
}

class PeerEvictionOnNode : public ::testing::Test {
protected:
  PeerEvictionOnNode() { node_.owner = &peers_; }

  FakeNode node_;
  NodeBudget budget_{&node_};
  Statistics statistics_;
  PeerEviction peers_{1ms, budget_, statistics_, nullptr};
};

TEST_F(PeerEvictionOnNode, UsesTheNodesClockAndPublishesRegionsOnce) {
  EXPECT_TRUE(peers_.sharesNode());
  EXPECT_EQ(peers_.tick(), 101U);
  Region first = regionOf(1);
  Region second = regionOf(2);
  // An operation's uses, grouped by region: each region published once.
  const std::vector<PageUse> uses{{&first, 0}, {&first, 1}, {&second, 0}};
  peers_.publish(uses);
  ASSERT_EQ(node_.published.size(), 1U);
  EXPECT_EQ(node_.published[0], (std::vector<RegionId>{1, 2}));
  peers_.observeLaunchFootprint(4096);
  EXPECT_EQ(node_.footprint, 4096U);
}

TEST_F(PeerEvictionOnNode, AnOwnerThatFreesNothingIsNotAskedAgain) {
  node_.candidates = {{1, 10, {}}, {2, 20, {}}};
  node_.freesRegion = 20;
  std::vector<PeerCandidate> refused;
  EXPECT_EQ(peers_.evictAt(node_.candidates[0], 4096, &refused), Status::NotFound);
  EXPECT_TRUE(node_.waitingWhileAsked); // others' requests get 0 at once meanwhile
  EXPECT_FALSE(peers_.waitingForOtherProcesses());
  ASSERT_EQ(refused.size(), 1U);
  std::vector<PeerCandidate> collected;
  peers_.collect(refused, &collected);
  ASSERT_EQ(collected.size(), 1U);
  EXPECT_EQ(collected[0].region, 20U);
  EXPECT_EQ(peers_.evictAt(collected[0], 4096, &refused), Status::Success);
  EXPECT_EQ(statistics_.peerEvictions, 1U);
  node_.reclaimAnswer = PeerReclaim::MustYield;
  EXPECT_EQ(peers_.reclaimElsewhere(4096), PeerReclaim::MustYield);
}

TEST_F(PeerEvictionOnNode, AYieldingOperationEvictsForTheOlderOnesUntilItsTurn) {
  node_.yieldsLeft = 1 << 30; // an older process waits until the request is served
  FakeVictims local;
  local.best = {300};
  std::optional<std::size_t> answer;
  std::thread server([&] {
    // Another process's request arrives while this one yields: the
    // yielding thread, which holds the manager's lock, serves it.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!answer && std::chrono::steady_clock::now() < deadline)
      answer = peers_.handoff().request(256, 0, deadline); // nullopt until the handoff opens
    node_.yieldsLeft = 0;                                  // the older process got its memory
  });
  EXPECT_TRUE(peers_.waitForTurn(256, local));
  server.join();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(*answer, 300U);
  EXPECT_EQ(statistics_.bytesEvictedWhileYielding, 300U);
  EXPECT_FALSE(peers_.waitingForOtherProcesses());
}

TEST_F(PeerEvictionOnNode, AYieldGivesUpWhenTheNodeStopsOrTheCallerHasSomewhereToGo) {
  FakeVictims local;
  node_.yieldsLeft = 1 << 30;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(peers_.waitForTurn(256, local, start + 20ms)); // host blocks to run from
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);

  node_.progressing = false; // nothing on the node moves for 4 x 1 ms
  EXPECT_FALSE(peers_.waitForTurn(256, local));
  node_.yieldsLeft = 0;
  node_.progressing = true;
  EXPECT_TRUE(peers_.waitForTurn(256, local)); // nobody older waits
}

} // namespace
} // namespace mqx
