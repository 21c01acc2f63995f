// SimDevice as a member of the node: another process's eviction request that
// names one of its regions (global victim selection, paper §6) evicts that
// region, as libmqx.so does, not the one its own replacement policy would
// choose.
#include "ipc/node_membership.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

class SimDeviceOnNode : public NodeFixture {
protected:
  // The regions `slot` publishes: region id -> last use.
  std::map<std::uint64_t, std::uint64_t> publishedBy(std::uint32_t slot) {
    std::map<std::uint64_t, std::uint64_t> regions;
    for (const ipc::PublishedRegion& entry : segment_->state().published[slot].entries) {
      ipc::RegionSummary summary;
      if (entry.read(&summary) && summary.residentBytes > 0) regions[summary.region] = summary.lastUse;
    }
    return regions;
  }
  std::uint32_t slotOf(pid_t pid) {
    ipc::RobustLock lock(segment_->state().lock);
    for (std::uint32_t slot = 0; slot < ipc::kMaxClients; ++slot)
      if (segment_->state().clients[slot].state == ipc::ClientState::Memory &&
          segment_->state().clients[slot].pid == pid)
        return slot;
    return ipc::kNoSlot;
  }
};

TEST_F(SimDeviceOnNode, AnEvictionRequestNamingARegionEvictsThatRegion) {
  // LRU would choose the older region: the request names the newer one.
  environment_["MQX_POLICY_REPLACEMENT"] = "lru";
  startDaemon();
  constexpr std::size_t kRegionBytes = 4 << 20;
  ChildProcess owner({SIM_DEVICE_CLIENT_PATH, "two-regions", std::to_string(kRegionBytes)}, environment_);
  ASSERT_TRUE(owner.waitForLine("ready", 10s));
  const std::uint32_t ownerSlot = slotOf(owner.pid());
  ASSERT_NE(ownerSlot, ipc::kNoSlot);
  const auto before = publishedBy(ownerSlot);
  ASSERT_EQ(before.size(), 2u);
  const auto older = before.begin()->second < before.rbegin()->second ? before.begin() : std::prev(before.end());
  const auto newer = older == before.begin() ? std::prev(before.end()) : before.begin();
  ASSERT_LT(older->second, newer->second);

  auto requester =
      ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Memory, "requester");
  ASSERT_NE(requester, nullptr);
  EXPECT_EQ(requester->requestEvictionOf(ownerSlot, newer->first, kRegionBytes), kRegionBytes);
  const auto after = publishedBy(ownerSlot);
  EXPECT_EQ(after.count(newer->first), 0u) << "the named region is still resident";
  EXPECT_EQ(after.count(older->first), 1u) << "the owner evicted its own choice instead of the named region";
  requester.reset();
  owner.signal(SIGTERM);
  EXPECT_EQ(owner.wait(10s), 0);
}

} // namespace
} // namespace mqx::test
