// SharedDeviceBudget: the budget of one of the node's devices (the
// membership's) in shared memory, behind the DeviceBudget interface that
// MemoryManager uses (docs/architecture.md decision 9; docs/daemon.md,
// "Several GPUs"). Each process's bytes are counted in its own client record, so the
// daemon gives a dead process's bytes back by freeing its record; a device's
// use is the sum of the records on it. It is also the manager's view of the
// other processes of its device (PeerRegions): the node clock, their
// published regions, and eviction of another process's region on request (paper §6),
// all through the process's NodeMembership; the launches' footprints go to
// the AdmissionClient of the query the process runs for (observed demand).
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/device_budget.hpp"
#include "core/peer_regions.hpp"

namespace mqx::ipc {

class AdmissionClient;
class NodeMembership;

class SharedDeviceBudget final : public DeviceBudget, public PeerRegions {
public:
  // Keeps `membership` (a memory client's) alive, and `queryDemand` (null:
  // launch footprints are not reported).
  explicit SharedDeviceBudget(std::shared_ptr<NodeMembership> membership,
                              std::shared_ptr<AdmissionClient> queryDemand = nullptr);
  ~SharedDeviceBudget() override;
  bool tryAcquire(std::size_t bytes) override;
  void release(std::size_t bytes) override;
  std::size_t used() const override;
  std::size_t limit() const override;
  std::size_t heldElsewhere() const override;
  // Cross-process eviction: asks the other processes to evict (paper §6,
  // evicting another query's regions when this one cannot proceed).
  bool reclaimElsewhere(std::size_t bytes) override;
  PeerRegions* peers() override { return this; }
  // Bytes this process holds.
  std::size_t held() const;

  std::uint64_t tick() override;
  void publish(std::span<const PublishedInputs> regions) override;
  void collect(std::vector<PeerCandidate>* out) override;
  std::size_t evictAt(const PeerCandidate& candidate, std::size_t bytes) override;
  void observeLaunchFootprint(std::size_t bytes) override;
  bool mustYield() override;
  PeerReclaim reclaim(std::size_t bytes) override;
  std::uint64_t progress() override;
  std::string describeNode() override;

private:
  void collectOnNode(std::vector<PeerCandidate>* out);

  std::shared_ptr<NodeMembership> membership_;
  std::shared_ptr<AdmissionClient> queryDemand_;
  // This process's published entries (the owner's side; under its
  // manager's lock): which entry holds which region, and the free ones.
  std::unordered_map<RegionId, std::uint32_t> entryOf_;
  std::vector<std::uint32_t> freeEntries_;
  bool entriesInitialised_ = false;
  // Once the node is lost (its segment damaged: NodeMembership::lost) this
  // process runs alone on what it holds, within the device's budget as the
  // node's header gave it (read once, while the segment was checked).
  std::uint64_t limitAlone_ = 0;
  std::atomic<std::uint64_t> heldAlone_{0}; // what this process holds, mirrored on every change
  std::atomic<std::uint64_t> clockAlone_{0};
};

} // namespace mqx::ipc
