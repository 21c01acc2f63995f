// PeerEviction: a memory manager's dealings with the other processes that
// share its node budget (docs/daemon.md; paper §6): asking the owner of
// another process's region to evict it, asking the others for anything,
// yielding an operation to an older process (and evicting for it meanwhile,
// EvictionHandoff), serving another process's request, and publishing this
// process's regions for the others' victim selection, and the logical clock
// of region uses. ResidencyManager keeps local residency (backing, loads,
// pins, its own victims) and calls this for everything that crosses a
// process boundary; MemoryManager owns both and hands this the residency
// (LocalVictims) where another process's request is served. Without a node
// every call is free and answers "nothing".
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/device_budget.hpp"
#include "core/eviction_handoff.hpp"
#include "core/peer_regions.hpp"
#include "core/region.hpp"
#include "core/statistics.hpp"
#include "device/device_backend.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx {

// What PeerEviction needs of the local residency to serve another process:
// evictions of this process's unpinned data that never wait for device work.
// Called with the manager's lock held (by the server thread that took it, or
// by the yielding thread itself).
class LocalVictims {
public:
  virtual ~LocalVictims() = default;
  // Evicts the unpinned backed pages of `region` (region granularity: only
  // when no page of it is pinned); the bytes freed, 0 when none or unknown.
  virtual std::size_t evictRegionNow(RegionId region) = 0;
  // Evicts the replacement policy's choice among the unpinned candidates;
  // the bytes freed, 0 when nothing is evictable without waiting.
  virtual std::size_t evictBestNow() = 0;
  // Gives back the budget held spare (ResidencyOptions::sparePages), which
  // moves nothing, and keeps none while another process holds budget; the
  // bytes given.
  virtual std::size_t giveSpare() = 0;
};

class PeerEviction {
public:
  // `evictionTimeout` (daemon.eviction_timeout_ms) sets how long a wait for
  // the other processes goes on without progress (stallLimit).
  PeerEviction(std::chrono::milliseconds evictionTimeout, DeviceBudget& budget, Statistics& statistics,
               trace::TraceRecorder* trace);

  bool sharesNode() const { return peers_ != nullptr; }
  // The logical clock of region uses: the node's when the budget is shared
  // (so that last uses of different processes compare), else this
  // process's.
  std::uint64_t tick() { return peers_ != nullptr ? peers_->tick() : ++clock_; }
  void observeLaunchFootprint(std::size_t bytes) {
    if (peers_ != nullptr) peers_->observeLaunchFootprint(bytes);
  }

  // Tells the other processes the current policy inputs of `region`, or of
  // the regions of `uses` (grouped by region) in one call. Free without a
  // node.
  void publish(const Region& region);
  void publish(std::span<const PageUse> uses);

  // The other processes' published regions, without those in `refused`
  // (their owners freed nothing for the page being backed).
  void collect(const std::vector<PeerCandidate>& refused, std::vector<PeerCandidate>* out);
  // Asks the owner of `victim` to evict it for `bytes`; NotFound (and
  // `victim` added to `refused`) when it freed nothing.
  Status evictAt(const PeerCandidate& victim, std::size_t bytes, std::vector<PeerCandidate>* refused);
  // Nothing local is evictable and no published region was freed: asks the
  // other processes for anything, waiting while the node progresses
  // (PeerRegions::reclaim). Without a node: NobodyElseHolds unless the
  // budget's own reclaimElsewhere freed something.
  PeerReclaim reclaimElsewhere(std::size_t bytes);
  // Whether an older process waits for memory: this operation must yield.
  bool mustYield() { return peers_ != nullptr && peers_->mustYield(); }
  // A yielding operation (it gave back what it backed for `bytes`): waits
  // until no older process waits for memory, evicting `local` victims for
  // them meanwhile (EvictionHandoff). As long as the node progresses it
  // waits; false (and a log line naming what it waited for) only when
  // nothing on the node progressed for stallLimit(daemon.eviction_timeout_ms),
  // or (no log) at `giveUpAt` when the caller has somewhere else to go (host
  // blocks).
  bool waitForTurn(std::size_t bytes, LocalVictims& local,
                   std::optional<std::chrono::steady_clock::time_point> giveUpAt = std::nullopt);

  // Another process's request: evicts unpinned `local` victims that the
  // policy chooses until `bytes` are freed or nothing is left unpinned;
  // never waits for device work. `preferred` (0 for none) goes first when it
  // is still evictable. The bytes freed. Called with the manager's lock held.
  std::size_t evictForOtherProcess(std::size_t bytes, RegionId preferred, LocalVictims& local);
  // Lock-free: whether this process is itself waiting for other processes
  // (then it has nothing to give them, and must not be waited for).
  bool waitingForOtherProcesses() const { return waitingForOthers_.load(std::memory_order_acquire); }
  // Where another process's request goes while an operation of this one
  // yields with the manager's lock held.
  EvictionHandoff& handoff() { return handoff_; }

private:
  // Sets waitingForOthers_ for a scope.
  class Waiting;

  const std::chrono::milliseconds evictionTimeout_;
  DeviceBudget& budget_;
  Statistics& statistics_;
  trace::TraceRecorder* trace_;
  PeerRegions* peers_;      // the budget's, when shared with other processes
  std::uint64_t clock_ = 0; // tick() without a node
  std::atomic<bool> waitingForOthers_{false};
  EvictionHandoff handoff_;
};

} // namespace mqx
