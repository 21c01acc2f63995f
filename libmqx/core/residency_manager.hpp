// ResidencyManager: the mechanism that backs pages with device memory, loads
// their content, pins them while device work uses them and evicts victims
// that the replacement policy chooses (docs/architecture.md decisions 7 and 8,
// paper §4 and §6). It knows nothing of the API semantics above it. Its
// pages change state only through PageStore's transitions; it does their
// side effects (mapping, transfers, slots). Residency is defined in
// residency_manager.cpp, eviction (victims, write-backs) in
// residency_eviction.cpp, write-backs ahead of eviction in
// residency_write_ahead.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "core/cow_tracker.hpp"
#include "core/device_budget.hpp"
#include "core/manager_options.hpp"
#include "core/page_store.hpp"
#include "core/peer_eviction.hpp"
#include "core/region_directory.hpp"
#include "core/statistics.hpp"
#include "core/swap_slots.hpp"
#include "device/device_backend.hpp"
#include "policy/replacement_policy.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx {

// One page that an operation needs on the device, and how it uses it.
struct PageUse {
  Region* region = nullptr;
  std::uint32_t page = 0;
  Access access = Access::Both;
};

struct ResidencyContext {
  ResidencyOptions options;
  device::DeviceBackend& backend;
  DeviceBudget& budget;
  SwapSlots& slots;
  CowTracker& cow;
  RegionDirectory& directory;
  Statistics& statistics;
  trace::TraceRecorder* trace = nullptr; // null: tracing off (trace.file = "")
};

class ResidencyManager : private LocalVictims {
public:
  ResidencyManager(ResidencyContext context, std::unique_ptr<ReplacementPolicy> policy);

  // Backs every page and loads those that are read, evicting other data if
  // needed; work enqueued on `stream` afterwards sees the loaded content.
  // Where pages map host blocks (mapsHost()), a page that cannot get device
  // memory (the operation needs more than the budget, or nothing is
  // evictable) stays mapped to its host block, its bytes written there
  // first: the operation is slower, never refused (docs/architecture.md).
  Status makeResident(std::span<const PageUse> uses, StreamHandle stream);

  // Whether pages that are not resident map host blocks (the swap buffer's
  // slots are host blocks): every page of a live region is then mapped.
  bool mapsHost() const { return context_.slots.mapsPages(); }
  // Maps the page (not backed) to its host block: its swap slot if it has
  // one, else a new slot (over the limit if need be: a live page must be
  // mapped). OutOfMemory when no host block can be had.
  Status mapToHost(Region& region, std::uint32_t page);
  // A new region (mapsHost()): every page mapped from the start, device
  // memory while the budget has room (as cuMemAlloc would), else a host
  // block. Its zeros are written before any launch can read it.
  Status mapNewRegion(Region& region);
  // Moves a swap image held in pageable memory into a host block, if one
  // can be had (the page can then map it).
  Status adoptBlock(Region& region, std::uint32_t page);
  // A page that is not resident got no host block: it stays unmapped.
  void leaveUnmapped(Status why);
  // Writes a pending page's image into its host block, which then holds its
  // bytes (PageState::pending). Nothing to do for a page that is not pending.
  Status materialize(Region& region, std::uint32_t page);
  // Device work enqueued before `fence` may reach any page of the process (a
  // launch whose references are not known): no page is remapped until the
  // fence is reached.
  void reachesEveryPage(const device::Fence& fence);
  bool everyPageReachable(); // a fence of reachesEveryPage is not yet reached
  // Counts changes that may leave a page pending or a resident page with a
  // host image; an operation that reaches every page prepares them only
  // when this changed since its last preparation.
  std::uint64_t stateVersion() const { return stateVersion_; }
  // Counts pages left pending by evictions and remaps (a host block mapped
  // under a page whose image is not written there).
  std::uint64_t pendingPagesMade() const { return pendingPagesMade_; }
  void noteStateChange() { ++stateVersion_; }
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
  // Waits until no page of `region` is pinned.
  Status waitUnpinned(const Region& region);
  Status waitAll();

  // Copies a page's device content into a new swap slot (the page must not
  // be pinned by work that writes it). Used to materialise a host image.
  Status readDeviceToSlot(Region& region, std::uint32_t page, std::byte* slot);
  // The region is freed: each page (none pinned) lets go of its host image,
  // its host block and its device memory.
  Status releaseRegion(Region& region);
  // Takes back the image a transition of the page let go of and releases
  // what it kept: its copy-on-write protection, or its swap slot unless that
  // is the page's host block (which stays mapped under it). Nothing for an
  // image of kind None. A refused transition's status is returned.
  [[nodiscard]] Status handBack(const Region& region, std::uint32_t page, PreviousImage previous);
  // The same for a transition that made `taken` the page's image: the page
  // keeps the slot when the transition was accepted, else it goes back.
  [[nodiscard]] Status handBack(const Region& region, std::uint32_t page, PreviousImage previous, SwapSlot& taken);

  // Waits until no load still reads an application buffer: a copy-on-write
  // source may be changed or released only then.
  void waitForSourceReads();

  // The logical clock of region uses: the node's when the budget is shared
  // (so that last uses of different processes compare), else this process's.
  std::uint64_t tick() { return peerEviction_.sharesNode() ? peerEviction_.tick() : ++clock_; }
  // Multi-process mode: tells the other processes the region's current
  // policy inputs (global victim selection). Free without a node.
  void publish(const Region& region) { peerEviction_.publish(region); }
  // The regions of an operation's uses (grouped by region), in one call.
  void publish(std::span<const PageUse> uses) { peerEviction_.publish(uses); }
  bool sharesNode() const { return peerEviction_.sharesNode(); }
  void observeLaunchFootprint(std::size_t bytes) { peerEviction_.observeLaunchFootprint(bytes); }

  // The cross-process side (PeerEviction): another process's request,
  // whether this process waits for others, the yielding operation's
  // handoff.
  std::size_t evictForOtherProcess(std::size_t bytes, RegionId preferred = 0) {
    return peerEviction_.evictForOtherProcess(bytes, preferred);
  }
  bool waitingForOtherProcesses() const { return peerEviction_.waitingForOtherProcesses(); }
  EvictionHandoff& handoff() { return peerEviction_.handoff(); }

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
  // releaseHostImage for a page whose host block is `backing`.
  void releaseImageHeld(const Region& region, std::uint32_t page, const HostImage& image, const std::byte* backing);
  // Frees device memory by evicting one victim; NotFound when nothing is
  // evictable, after waiting for in-flight work if there is any.
  // With a node, the victim may be another process's region (paper §6):
  // its owner is asked to evict it; those that freed nothing are added to
  // `refused` and not chosen again.
  Status evictOne(const std::vector<RegionId>& keep, std::size_t bytes, std::vector<PeerCandidate>* refused);
  // LocalVictims: another process's request, served under the manager's lock.
  std::size_t evictRegionNow(RegionId region) override;
  std::size_t evictBestNow() override;
  std::size_t victimBytes(const Victim& victim) const;
  void traceUsage(); // counter samples of the budget and the swap buffer (tracing on)
  std::vector<Victim> candidates(const std::vector<RegionId>& keep, std::vector<EvictionCandidate>* out);
  Status evict(const Victim& victim);
  // A dirty page on its way to the swap buffer, or a clean page's new host
  // block.
  struct WriteBack {
    std::uint32_t index;
    SwapSlot slot;
    device::Fence done;
  };
  // A page leaving device memory: its physical memory goes back to the
  // budget, then (mapBackings) the host block holding its bytes is mapped
  // under it.
  struct PageBacking {
    std::uint32_t index;
    std::byte* slot;     // its swap image's slot; null: mapToHost finds one
    SwapSlot newBlock{}; // a clean page's new block (pending until written), which it takes once mapped
  };
  Status releaseDevicePage(Region& region, std::uint32_t index);
  Status mapBackings(Region& region, std::span<PageBacking> backings);
  void unpin(const PendingWork& work);
  // Calls `function` (which returns false to stop) on each page of `pages`
  // whose region still exists; returns the position it stopped at.
  template <typename Function> std::size_t forEachPage(const std::vector<PageKey>& pages, Function&& function);

  ResidencyContext context_;
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
    std::uint64_t reachAllCount;
    device::Fence done;
  };
  // Makes the completed writes ahead the pages' swap images (poll).
  void finishWritesAhead();
  std::vector<WriteAhead> writesAhead_;
  std::size_t writeAheadBytes_ = 0; // in flight
  bool evictedSinceWriteAhead_ = false;
  std::uint64_t reachAllCount_ = 0;     // reachesEveryPage calls
  std::uint64_t reachAllCountSeen_ = 0; // as of writeBackAhead's last call
  // writeBackAhead calls since one saw a new reachesEveryPage (none yet: as
  // many as it takes).
  std::uint32_t operationsSinceReachAll_ = std::numeric_limits<std::uint32_t>::max();

  // The latest loads (makeResident): whether they may still run (their fence
  // not yet seen reached; SwapSlots knows about the swap slots they read),
  // the fence after them on the transfer stream, and the streams
  // ordered after them (orderAfterLoads).
  bool latestLoadsRunning_ = false;
  bool loadsFenced_ = false;
  device::Fence loadsDone_;
  std::vector<StreamHandle> streamsAfterLoads_;

  std::deque<PendingWork> pending_;
  std::vector<device::Fence> reachAll_; // reachesEveryPage's fences not yet seen reached
  bool warnedUnmapped_ = false;
  std::uint64_t stateVersion_ = 0;
  std::uint64_t pendingPagesMade_ = 0;
  std::uint64_t clock_ = 0;
  bool sourceReadsInFlight_ = false;
  PeerEviction peerEviction_; // everything that crosses a process boundary
};

} // namespace mqx
