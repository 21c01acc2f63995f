#include "core/residency_manager.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/log.hpp"
#include "core/load_batch.hpp"
#include "core/page_store.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

bool contains(const std::vector<RegionId>& ids, RegionId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The spare pages are kept only where they are at most this fraction of the
// budget (ResidencyManager::back).
constexpr std::size_t kBudgetPerSpare = 16;

std::uint64_t nanosecondsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

} // namespace

ResidencyManager::ResidencyManager(ResidencyContext context, std::unique_ptr<ReplacementPolicy> policy)
    : context_(context), mapper_(context.mapper), slots_(context.slots), peers_(context.peers),
      policy_(std::move(policy)) {}

Status ResidencyManager::makeResident(std::span<const PageUse> uses, StreamHandle stream) {
  trace::TraceSpan span(context_.trace, "make resident", "residency", trace::kCurrentThreadTrack);
  span.argument("pages", uses.size());
  // Every page already has device memory and, where it is read, its bytes
  // there: the common launch on resident data. Nothing to back, load or
  // time; two clock reads and two allocations less on the launch path,
  // whose added latency has a budget of 1 us (bench/gpu, launch_call_us).
  const auto inPlace = [](const PageUse& use) {
    const PageState& page = use.region->pages[use.page];
    return page.backed() && (page.deviceValid() || !reads(use.access));
  };
  if (std::ranges::all_of(uses, inPlace)) return orderAfterLoads(stream);
  const auto start = std::chrono::steady_clock::now();
  std::vector<RegionId> keep;
  std::size_t needed = 0;
  for (const auto& use : uses) {
    if (!contains(keep, use.region->id)) keep.push_back(use.region->id);
    needed += use.region->pages[use.page].backed() ? 0 : use.region->pageMappedBytes(use.page);
  }
  // Pages that map host blocks: what gets no device memory runs from there.
  const bool hostFallback = mapper_.mapsHost();
  if (needed > context_.budget.limit() && !hostFallback) { // can never fit at once
    log(LogLevel::Info,
        "an operation needs {} bytes of device memory at once; the budget is "
        "{}",
        needed, context_.budget.limit());
    return Status::OutOfMemory;
  }

  std::vector<PageKey> newlyBacked;
  Status backed = backAll(uses, keep, &newlyBacked, false);
  // Two processes whose launches each need much of the node could each back
  // part and wait for the other forever (docs/daemon.md, "deadlock"). The
  // younger (later arrival on the node) gives back what it backed for this
  // launch, which holds nothing yet, lets the older one proceed, and tries
  // again after it: a fixed node-wide order, so one of them always proceeds.
  // It waits as long as the older ones progress (waitForTurn), however long
  // that is: queue or evict, never abort (docs/daemon.md). Where pages map
  // host blocks, it waits at most 4 x daemon.eviction_timeout_ms and then
  // runs what gets no device memory from its host blocks.
  const auto fallbackAt =
      std::chrono::steady_clock::now() + 4 * std::chrono::milliseconds(context_.options.evictionTimeoutMilliseconds);
  while (backed == Status::NotReady) {
    for (const PageKey& key : newlyBacked)
      MQX_TRY(unbackUnloaded(*context_.directory.byId(key.region), key.page));
    newlyBacked.clear();
    ++context_.statistics.launchYields;
    const auto turnBy = hostFallback ? std::optional(fallbackAt) : std::nullopt;
    const bool turn = peers_.waitForTurn(needed, *this, turnBy);
    if ((!turn || std::chrono::steady_clock::now() >= fallbackAt) && hostFallback) {
      // Pages that get no device memory run from their host blocks: slower,
      // never refused.
      backed = backAll(uses, keep, &newlyBacked, true);
      break;
    }
    if (!turn) return Status::OutOfMemory; // the node stopped progressing: logged
    backed = backAll(uses, keep, &newlyBacked, false);
  }
  if (backed == Status::OutOfMemory && hostFallback) backed = backAll(uses, keep, &newlyBacked, true);
  MQX_TRY(backed);
  LoadBatch loads;
  LoadSources read;
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (!page.backed()) { // runs from its host block
      if (reads(use.access)) MQX_TRY(mapper_.materialize(*use.region, use.page));
      continue;
    }
    if (reads(use.access) && !page.deviceValid()) {
      MQX_TRY(mapper_.loaded(page)); // refused without a host image: never both copies gone
      loads.add(use.region->pageAddress(use.page), page.host(), use.region->pageDataBytes(use.page));
    }
  }
  Status issued = Status::Success;
  bool loadsIssued = false;
  const auto issueLoads = [&] {
    if (std::exchange(loadsIssued, true)) return issued;
    if (!loads.empty())
      if (issued = mapper_.orderLoadsAfterReaders(context_.backend.transferStream(device::TransferDirection::ToDevice));
          !ok(issued))
        return issued;
    issued = loads.issue(context_.backend, slots_.pinned(), context_.statistics, context_.trace, read);
    mapper_.loadsIssued(read);
    return issued;
  };
  // A page that took the spare is loaded while the victim that refills the
  // spare is written back: the two copy engines at once, where evicting
  // first put a whole write-back before the load (bench/results/
  // peers-matrix-trace-H100-2d123b6.json: 1.4 ms of 3.2 ms per eviction).
  // The std::function only when the spare is short: not on every load.
  if (spareBytes_ != 0 && spare_.bytes() < spareBytes_) MQX_TRY(refillSpare(keep, std::function<Status()>(issueLoads)));
  MQX_TRY(issueLoads());
  auto& backend = context_.backend;
  const StreamHandle toDevice = backend.transferStream(device::TransferDirection::ToDevice);
  if (!loads.empty()) {
    MQX_TRY(backend.order(toDevice, stream));
    latestLoadsRunning_ = true;
    loadsFenced_ = ok(backend.enqueueFence(toDevice, &loadsDone_));
    streamsAfterLoads_.assign(1, stream);
  } else {
    MQX_TRY(orderAfterLoads(stream));
  }
  context_.statistics.residencyWaitNanoseconds += nanosecondsSince(start);
  span.argument("loads", loads.size());
  if (span.active()) traceUsage();
  return Status::Success;
}

Status ResidencyManager::orderAfterLoads(StreamHandle stream) {
  if (!latestLoadsRunning_ || std::ranges::find(streamsAfterLoads_, stream) != streamsAfterLoads_.end())
    return Status::Success;
  auto& backend = context_.backend;
  if (loadsFenced_ && backend.fenceReached(loadsDone_)) { // done: nothing left to wait for
    latestLoadsRunning_ = false;
    streamsAfterLoads_.clear();
    return Status::Success;
  }
  MQX_TRY(backend.order(backend.transferStream(device::TransferDirection::ToDevice), stream));
  streamsAfterLoads_.push_back(stream);
  return Status::Success;
}

void ResidencyManager::forgetStream(StreamHandle stream) { std::erase(streamsAfterLoads_, stream); }

void ResidencyManager::traceUsage() {
  context_.trace->record(trace::counterEvent("device budget used", "bytes", context_.budget.used()));
  context_.trace->record(trace::counterEvent("swap buffer used", "bytes", slots_.usedBytes()));
}

Status ResidencyManager::backAll(std::span<const PageUse> uses, const std::vector<RegionId>& keep,
                                 std::vector<PageKey>* newlyBacked, bool hostFallback) {
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (page.backed()) continue;
    // A page that in-flight work may reach through its host block is
    // remapped only once that work is done: this operation waits for it
    // (device memory is worth it), unless it already runs from host blocks.
    if (page.hostMapped() && mapper_.mayBeReached(page, PageAccess::Remap)) {
      if (hostFallback) continue;
      MQX_TRY(countFenceWait(FenceWait::ToRemap, [&] {
        Status waited = Status::Success;
        while (ok(waited) && mapper_.mayBeReached(page, PageAccess::Remap) && !pending_.empty()) {
          waited = context_.backend.waitFence(pending_.front().fence);
          poll();
        }
        return waited;
      }));
    }
    Status status = back(*use.region, use.page, keep);
    if (hostFallback && page.hostMapped() && (status == Status::OutOfMemory || status == Status::NotReady)) continue;
    MQX_TRY(status);
    newlyBacked->push_back({use.region->id, use.page});
  }
  return Status::Success;
}

Status ResidencyManager::refillSpare(const std::vector<RegionId>& keep, const std::function<Status()>& issueLoads) {
  if (spareBytes_ == 0 || spare_.bytes() >= spareBytes_) return Status::Success;
  // Another process came: what is held spare goes back, and none is kept
  // until the budget is found full with this process alone (back).
  if (context_.budget.heldElsewhere() != 0) {
    (void)giveSpare();
    return Status::Success;
  }
  const std::size_t page = spareBytes_ / std::max(1u, context_.options.sparePages);
  // What the budget has free, a page at a time; then what is short of a page.
  const auto takeFree = [&] {
    while (spare_.bytes() < spareBytes_) {
      BudgetReservation more = mapper_.reserve(std::min(page, spareBytes_ - spare_.bytes()));
      if (!more) return;
      spare_.absorb(std::move(more));
    }
  };
  takeFree();
  if (spareBytes_ - spare_.bytes() < page) return Status::Success; // a page short at most: not worth a victim
  trace::TraceSpan span(context_.trace, "refill spare page", "eviction", trace::kCurrentThreadTrack);
  std::vector<PeerCandidate> refused;
  // A victim at a time, each written back while the loads run (the first
  // eviction issues them), at most one per spare page and one more (a
  // victim may free less than a page).
  for (unsigned victim = 0; victim <= context_.options.sparePages && spareBytes_ - spare_.bytes() >= page; ++victim) {
    // Only this process's victims: asking another one waits for its answer
    // with the loads not yet issued.
    // And only victims of at most a page: with region victims, refilling a
    // page by evicting a whole large region evicted ahead of need (on the
    // simulated device's SSB grid FIX-2 evicted 20% more; admission_smoke).
    const Status evicted = evictOne(keep, page, &refused, EvictionRun{false, false, page, &issueLoads});
    // Nothing evictable without waiting, or no swap slot for the victim:
    // the operation goes on with less spare (the next back() evicts first).
    if (evicted == Status::NotFound || evicted == Status::OutOfMemory) return Status::Success;
    MQX_TRY(evicted);
    takeFree();
  }
  // The staging memory of write-backs takes a page of the full spare, once:
  // the next operation that backs a page tops the spare up again.
  if (context_.options.stagedWriteBack && !staging_ && mapper_.mapsHost() && spare_.bytes() >= spareBytes_)
    if (Status mapped = mapper_.mapStaging(spare_.split(page), &staging_); !ok(mapped))
      log(LogLevel::Debug, "no staging memory for write-backs: {}", toString(mapped));
  return Status::Success;
}

Status ResidencyManager::unbackUnloaded(Region& region, std::uint32_t index) {
  // Backed by the launch that yields, before any load: nothing to keep.
  MQX_TRY(mapper_.unmapFromDevice(region, index));
  if (mapper_.mapsHost())
    if (Status status = mapper_.mapToHost(region, index); !ok(status)) mapper_.leaveUnmapped(status);
  return Status::Success;
}

Status ResidencyManager::back(Region& region, std::uint32_t index, const std::vector<RegionId>& keep) {
  const std::size_t bytes = region.pageMappedBytes(index);
  std::vector<PeerCandidate> refused; // other processes' regions whose owners freed nothing
  for (;;) {
    BudgetReservation reservation = mapper_.reserve(bytes);
    // The budget is full: the spare page, when there is one, backs it now
    // (makeResident refills it while this operation's loads run). What is
    // left of it after a smaller page is given back whole for a larger one:
    // stranded, it could fail an operation that needs the whole budget.
    if (!reservation && spare_) {
      if (spare_.bytes() >= bytes) {
        reservation = spare_.split(bytes);
      } else {
        spare_ = {};
        reservation = mapper_.reserve(bytes);
      }
    }
    if (reservation) {
      // A page on its host block leaves it (no in-flight work reaches it:
      // backAll asked).
      const Status status = mapper_.mapToDevice(region, index, std::move(reservation));
      if (status != Status::OutOfMemory) return status;
      // The device is fuller than our budget says (other users, or
      // fragmentation): evict something and retry, as the paper's two-round
      // allocation does (§6).
      log(LogLevel::Debug, "device map of {} bytes failed within budget; evicting and retrying", bytes);
    }
    // From the first time the budget is full, pages are kept spare, where
    // they are at most a sixteenth of the budget: more would cost more
    // residency than their overlap saves. A spare page is one of the
    // manager's pages, whatever the miss: sized by a small miss (a hash
    // table), it passed where the pages did not, and each refill evicted a
    // whole page ahead of need (on the simulated SSB queries at 40 MiB with
    // 8 MiB pages, 47% more evictions; bench/results/solo-paging-sim-*).
    const std::size_t spare = context_.pageSize * context_.options.sparePages;
    // Only while no other process holds any of the budget: a spare held
    // idle is budget they need (the simulated SSB grid evicted 20-50% more
    // under FIX-2 with a spare in every process), but a process alone on its
    // device, as under mqx-run, gains the overlap (docs/results.md).
    if (spare * kBudgetPerSpare <= context_.budget.limit() && context_.budget.heldElsewhere() == 0)
      spareBytes_ = std::max(spareBytes_, spare);
    Status evicted = evictOne(keep, bytes, &refused);
    if (evicted == Status::NotFound) {
      // Nothing of ours is evictable and no published region of another
      // process was freed: the other processes are asked for anything
      // (paper §6).
      // Only the answer decides: checking mustYield() again here raced with
      // the older process getting its memory, and failed this operation
      // with out of memory although it only had to retry.
      switch (peers_.reclaimElsewhere(bytes)) {
      case PeerReclaim::Freed: continue;
      case PeerReclaim::MustYield: return Status::NotReady;     // makeResident yields
      case PeerReclaim::NoProgress: return Status::OutOfMemory; // logged with what it waited for
      case PeerReclaim::NobodyElseHolds: break;
      }
      log(LogLevel::Info, "cannot back {} bytes: budget {} of {} used, nothing evictable", bytes,
          context_.budget.used(), context_.budget.limit());
      return Status::OutOfMemory;
    }
    MQX_TRY(evicted);
  }
}

template <typename Function>
std::size_t ResidencyManager::forEachPage(const std::vector<PageKey>& pages, Function&& function) {
  // Keys come grouped by region: one directory lookup per region, not per page.
  Region* region = nullptr;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const PageKey& key = pages[i];
    if (region == nullptr || region->id != key.region) region = context_.directory.byId(key.region);
    if (region != nullptr && !function(region->pages[key.page])) return i;
  }
  return pages.size();
}

Status ResidencyManager::pinUntilComplete(std::span<const PageKey> pages, StreamHandle stream, device::Fence* fence) {
  device::Fence point;
  MQX_TRY(context_.backend.enqueueFence(stream, &point));
  if (fence != nullptr) *fence = point;
  // The same pages as the newest entry's, on the same stream (a kernel
  // launched again and again): that entry now waits for this fence instead.
  // Its pages would stay pinned until this fence anyway, and the list stays
  // one entry long however many such launches are in flight, where poll()
  // walks it on every launch.
  if (!pending_.empty()) {
    PendingWork& newest = pending_.back();
    if (newest.fence.slot == point.slot && std::ranges::equal(newest.pages, pages)) {
      newest.fence = point;
      return Status::Success;
    }
  }
  PendingWork work{point, {pages.begin(), pages.end()}};
  Status pinned = Status::Success;
  const std::size_t done = forEachPage(work.pages, [&](PageState& page) {
    pinned = PageStore::pin(page);
    return ok(pinned);
  });
  // After a refused pin, the pages pinned before it are unpinned when the
  // fence is reached, like any others.
  work.pages.resize(done);
  pending_.push_back(std::move(work));
  return pinned;
}

Status ResidencyManager::countFenceWait(FenceWait why, const std::function<Status()>& wait) {
  Statistics& statistics = context_.statistics;
  ++statistics.fenceWaits;
  if (why == FenceWait::ToRemap) ++statistics.fenceWaitsToRemap;
  trace::TraceSpan span(context_.trace, why == FenceWait::ToRemap ? "fence wait (remap)" : "fence wait", "wait",
                        trace::kCurrentThreadTrack);
  const auto started = std::chrono::steady_clock::now();
  const Status waited = wait();
  statistics.fenceWaitNanoseconds += nanosecondsSince(started);
  return waited;
}

void ResidencyManager::unpin(const PendingWork& work) {
  forEachPage(work.pages, [](PageState& page) {
    // A refusal (more unpins than pins) is logged by the page store; the
    // other pages still unpin.
    [[maybe_unused]] const Status unpinned = PageStore::unpin(page);
    return true;
  });
}

void ResidencyManager::poll() {
  slots_.reclaim(false);
  // Fences of different streams complete out of order, those of one stream
  // in order: past a stream's first unreached fence, its later ones are not
  // reached either. This keeps a launch's poll at one check per stream.
  std::uint64_t blockedSlots = 0; // slots below 64 that have an unreached fence
  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::uint32_t slot = it->fence.slot;
    const bool blocked = slot < 64 && (blockedSlots & (std::uint64_t{1} << slot)) != 0;
    if (!blocked && context_.backend.fenceReached(it->fence)) {
      unpin(*it);
      it = pending_.erase(it);
      continue;
    }
    if (slot < 64) blockedSlots |= std::uint64_t{1} << slot;
    ++it;
  }
  if (!writesAhead_.empty()) finishWritesAhead();
}

Status ResidencyManager::waitUnpinned(const PageState& page) {
  poll();
  while (page.pinned()) {
    if (pending_.empty()) return Status::Unknown; // pins without pending work: a bug
    MQX_TRY(context_.backend.waitFence(pending_.front().fence));
    poll();
  }
  return Status::Success;
}

Status ResidencyManager::waitUnreached(const Region& region) {
  poll();
  while (mayBeReached(region)) {
    // Launches that may reach every page first, then the work that pinned
    // the region's pages, oldest first.
    if (mapper_.everyPageReachable()) {
      MQX_TRY(mapper_.waitForEveryPageWork());
      continue;
    }
    if (pending_.empty()) return Status::Unknown; // pins without pending work: a bug
    MQX_TRY(context_.backend.waitFence(pending_.front().fence));
    poll();
  }
  return Status::Success;
}

Status ResidencyManager::waitAll() {
  while (!pending_.empty()) {
    MQX_TRY(context_.backend.waitFence(pending_.front().fence));
    poll();
  }
  slots_.reclaim(true);
  mapper_.waitForSourceReads();
  return Status::Success;
}

} // namespace mqx
