// ResidencyManager: the mechanism that backs pages with device memory, loads
// their content, pins them while device work uses them and evicts victims
// that the replacement policy chooses (docs/architecture.md decisions 7 and 8,
// paper §4 and §6). It knows nothing of the API semantics above it. It
// decides what moves; the page mapper (core/page_mapper.hpp) makes each
// mapping change with the resources that go with it, and says whether
// in-flight work may reach a page. Residency is defined in
// residency_manager.cpp, eviction (victims, write-backs) in
// residency_eviction.cpp, write-backs ahead of eviction in
// residency_write_ahead.cpp.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "core/device_budget.hpp"
#include "core/manager_options.hpp"
#include "core/page_mapper.hpp"
#include "core/peer_eviction.hpp"
#include "core/region_directory.hpp"
#include "core/statistics.hpp"
#include "core/swap_slots.hpp"
#include "device/device_backend.hpp"
#include "policy/replacement_policy.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx {

struct ResidencyContext {
  ResidencyOptions options;
  device::DeviceBackend& backend;
  const DeviceBudget& budget; // read only: PageMapper charges it
  PageMapper& mapper;
  SwapSlots& slots;
  RegionDirectory& directory;
  PeerEviction& peers; // the other processes of the node (free without one)
  Statistics& statistics;
  trace::TraceRecorder* trace = nullptr; // null: tracing off (trace.file = "")
  std::size_t pageSize = 0;              // the manager's page size: a spare page is one (back)
};

// Evicting for another process (LocalVictims) is PeerEviction's to ask:
// PeerEviction::evictForOtherProcess and waitForTurn take this manager.
// How ResidencyManager::evictOne goes about it: whether it waits for
// in-flight work when nothing is evictable now, whether it may ask another
// process (and wait for its answer), and what evict() runs once
// the victim's write-backs are enqueued, before it waits for them
// (ResidencyManager::refillSpare).
struct EvictionRun {
  bool mayWait = true;
  bool otherProcesses = true;    // victims among other processes' published regions too (paper §6)
  std::size_t largestVictim = 0; // victims of at most these bytes (0: any)
  const std::function<Status()>* whileWritingBack = nullptr;
};

class ResidencyManager final : public LocalVictims {
public:
  ResidencyManager(ResidencyContext context, std::unique_ptr<ReplacementPolicy> policy);

  // Backs every page and loads those that are read, evicting other data if
  // needed; work enqueued on `stream` afterwards sees the loaded content.
  // Where pages map host blocks (PageMapper::mapsHost), a page that cannot
  // get device memory (the operation needs more than the budget, or nothing
  // is evictable) stays mapped to its host block, its bytes written there
  // first: the operation is slower, never refused (docs/architecture.md).
  Status makeResident(std::span<const PageUse> uses, StreamHandle stream);
  // Loads make pages valid for every later operation on any stream, yet only
  // the stream of the operation that issued them is ordered after them: an
  // operation on another stream, whose pages are then all in place, must
  // wait for the loads still in flight too, or it reads a page before its
  // bytes arrive (ManagerTest.AKernelOnAnotherStreamWaitsForTheLoadAnEarlierLaunchIssued).
  // Orders `stream` after them unless it already is or they are done.
  Status orderAfterLoads(StreamHandle stream);
  // The application destroyed `stream`: its handle may come back as another
  // stream, which is not ordered after anything.
  void forgetStream(StreamHandle stream);
  // Pins `pages` until the work enqueued on `stream` so far completes.
  Status pinUntilComplete(std::span<const PageKey> pages, StreamHandle stream, device::Fence* fence = nullptr);

  // Under eviction pressure (an eviction since the last call), writes the
  // dirty pages next in line for eviction back to the swap buffer on the
  // device-to-host stream, without waiting, up to
  // ResidencyOptions::writeBackAheadFraction of the budget: their eviction
  // then moves no data (residency_write_ahead.cpp). Called after a launch
  // is enqueued, so that it does not delay the launch.
  void writeBackAhead();

  // Unpins pages whose work has completed.
  void poll();
  // Waits until no in-flight work may reach a page of `region` (it is
  // about to be freed).
  Status waitUnreached(const Region& region);
  // Waits until no in-flight work pins the page: its host image may then be
  // read on the host (a staged write-back may still be filling it, evict).
  Status waitUnpinned(const PageState& page);
  Status waitAll();

  // LocalVictims: another process's request, served under the manager's lock.
  std::size_t evictRegionNow(RegionId region) override;
  std::size_t evictBestNow() override;
  std::size_t giveSpare() override;

private:
  struct PendingWork {
    device::Fence fence;
    std::vector<PageKey> pages;
  };
  struct Victim {
    Region* region;
    std::vector<std::uint32_t> pages;
  };

  // Backs every page of `uses` that is not; the pages it backed are added to
  // `newlyBacked` (they hold nothing yet). With `hostFallback`, a page that
  // gets no device memory stays on its host block instead of failing.
  Status backAll(std::span<const PageUse> uses, const std::vector<RegionId>& keep, std::vector<PageKey>* newlyBacked,
                 bool hostFallback);
  // NotReady: this launch must yield to an older process (makeResident).
  Status back(Region& region, std::uint32_t page, const std::vector<RegionId>& keep);
  Status unbackUnloaded(Region& region, std::uint32_t page);
  // Frees device memory by evicting one victim; NotFound when nothing is
  // evictable, after waiting for in-flight work if there is any (and
  // `run.mayWait`). With a node, the victim may be another process's region
  // (paper §6): its owner is asked to evict it; those that freed nothing
  // are added to `refused` and not chosen again.
  Status evictOne(const std::vector<RegionId>& keep, std::size_t bytes, std::vector<PeerCandidate>* refused,
                  const EvictionRun& run = {});
  // Tops the spare page up (ResidencyOptions::sparePages): from the budget,
  // else by evicting a victim whose write-backs run while `issueLoads` (this
  // operation's loads, into pages that took the spare) runs on the other copy
  // engine. Whatever happens, `issueLoads` has run once when it returns
  // Success. Never waits for in-flight work or another process: with
  // nothing of its own evictable now, the next back() evicts as before.
  Status refillSpare(const std::vector<RegionId>& keep, const std::function<Status()>& issueLoads);
  std::size_t victimBytes(const Victim& victim) const;
  void traceUsage(); // counter samples of the budget and the swap buffer (tracing on)
  // Whether the page may be evicted now: resident, and no in-flight work
  // may reach it.
  bool evictable(const PageState& page);
  // Whether in-flight work may reach a page of `region` (PageMapper::mayBeReached).
  bool mayBeReached(const Region& region);
  std::vector<Victim> candidates(const std::vector<RegionId>& keep, std::vector<EvictionCandidate>* out);
  Status evict(const Victim& victim, const std::function<Status()>* whileWritingBack = nullptr);
  // A dirty page on its way to the swap buffer, or a clean page's new host
  // block.
  struct WriteBack {
    std::uint32_t index;
    SwapSlot slot;
    device::Fence done;
  };
  // A staged write-back of `page` is in flight (evict): pins the page until
  // it is done and orders all later device work after it.
  Status afterStagedWriteBack(const PageKey& page);
  // Gives an evicted page's device memory back (its host block is mapped
  // afterwards, in a batch).
  Status releaseDevicePage(Region& region, std::uint32_t index);
  void unpin(const PendingWork& work);
  // Why mqx waits for in-flight work (Statistics::fenceWaits).
  enum class FenceWait { ToEvict, ToRemap };
  // Runs `wait` as one fence wait of kind `why`: counted, traced and timed
  // the same way wherever mqx waits (Statistics::fenceWaitNanoseconds).
  Status countFenceWait(FenceWait why, const std::function<Status()>& wait);
  // Calls `function` (which returns false to stop) on each page of `pages`
  // whose region still exists; returns the position it stopped at.
  template <typename Function> std::size_t forEachPage(const std::vector<PageKey>& pages, Function&& function);

  ResidencyContext context_;
  PageMapper& mapper_;
  SwapSlots& slots_;
  PeerEviction& peers_;
  std::unique_ptr<ReplacementPolicy> policy_;

  // A write-back ahead of eviction: the page is pinned until `done`; its
  // bytes are in `slot` then if nothing changed the page meanwhile (its
  // generation, and no launch that may reach every page was enqueued).
  struct WriteAhead {
    PageKey page;
    SwapSlot slot;
    std::size_t slotBytes;
    std::size_t dataBytes;
    std::uint32_t generation;
    std::uint64_t everyPageLaunches;
    device::Fence done;
  };
  // Makes the completed writes ahead the pages' swap images (poll).
  void finishWritesAhead();
  std::vector<WriteAhead> writesAhead_;
  std::size_t writeAheadBytes_ = 0; // in flight
  bool evictedSinceWriteAhead_ = false;
  std::uint64_t everyPageLaunchesSeen_ = 0; // as of writeBackAhead's last call
  // writeBackAhead calls since one saw a new launch that may reach every
  // page (none yet: as many as it takes).
  std::uint32_t operationsSinceEveryPageLaunch_ = std::numeric_limits<std::uint32_t>::max();

  // The latest loads (makeResident): whether they may still run (their fence
  // not yet seen reached; SwapSlots knows about the swap slots they read),
  // the fence after them on the transfer stream, and the streams ordered
  // after them (orderAfterLoads).
  bool latestLoadsRunning_ = false;
  bool loadsFenced_ = false;
  device::Fence loadsDone_;
  std::vector<StreamHandle> streamsAfterLoads_;

  std::deque<PendingWork> pending_;

  // The spare page (ResidencyOptions::sparePages): budget held for a page to
  // take at once; spareBytes_ is 0 until the budget was found full with no
  // other process holding any of it, then the largest page that had to wait
  // for an eviction; 0 again once another process holds some (giveSpare,
  // refillSpare).
  BudgetReservation spare_;
  std::size_t spareBytes_ = 0;
  // Staging memory for write-backs (ResidencyOptions::stagedWriteBack):
  // a page of the budget, kept while spare pages are (refillSpare).
  StagingMemory staging_;
};

} // namespace mqx
