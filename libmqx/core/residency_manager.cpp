#include "core/residency_manager.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/log.hpp"
#include "core/host_image.hpp"
#include "core/load_batch.hpp"
#include "core/page_store.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

bool contains(const std::vector<RegionId>& ids, RegionId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::uint64_t nanosecondsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

} // namespace

ResidencyManager::ResidencyManager(ResidencyContext context, std::unique_ptr<ReplacementPolicy> policy)
    : context_(context), policy_(std::move(policy)),
      peerEviction_(std::chrono::milliseconds(context.options.evictionTimeoutMilliseconds), context.budget,
                    context.statistics, context.trace, *this) {}

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
  if (std::ranges::all_of(uses, inPlace)) {
    ++stateVersion_;
    return orderAfterLoads(stream);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<RegionId> keep;
  std::size_t needed = 0;
  for (const auto& use : uses) {
    if (!contains(keep, use.region->id)) keep.push_back(use.region->id);
    needed += use.region->pages[use.page].backed() ? 0 : use.region->pageMappedBytes(use.page);
  }
  ++stateVersion_;
  // Pages that map host blocks: what gets no device memory runs from there.
  const bool hostFallback = mapsHost();
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
    const bool turn = peerEviction_.waitForTurn(needed, turnBy);
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
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (!page.backed()) { // runs from its host block
      if (reads(use.access)) MQX_TRY(materialize(*use.region, use.page));
      continue;
    }
    if (reads(use.access) && !page.deviceValid()) {
      MQX_TRY(PageStore::loaded(page)); // refused without a host image: never both copies gone
      loads.add(use.region->pageAddress(use.page), page.host(), use.region->pageDataBytes(use.page));
    }
  }
  LoadSources read;
  const Status issued =
      loads.issue(context_.backend, context_.slots.pinned(), context_.statistics, context_.trace, read);
  sourceReadsInFlight_ = sourceReadsInFlight_ || read.applicationBuffers;
  if (read.swapSlots) context_.slots.loadsRead();
  MQX_TRY(issued);
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
  context_.trace->record(trace::counterEvent("swap buffer used", "bytes", context_.slots.usedBytes()));
}

Status ResidencyManager::backAll(std::span<const PageUse> uses, const std::vector<RegionId>& keep,
                                 std::vector<PageKey>* newlyBacked, bool hostFallback) {
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (page.backed()) continue;
    // A page that in-flight work may reach through its host block is
    // remapped only once that work is done: this operation waits for it
    // (device memory is worth it), unless it already runs from host blocks.
    if (page.hostMapped() && (page.pinned() || everyPageReachable())) {
      if (hostFallback) continue;
      ++context_.statistics.fenceWaits;
      while ((page.pinned() || everyPageReachable()) && !pending_.empty()) {
        MQX_TRY(context_.backend.waitFence(pending_.front().fence));
        poll();
      }
    }
    Status status = back(*use.region, use.page, keep);
    if (hostFallback && page.hostMapped() && (status == Status::OutOfMemory || status == Status::NotReady)) continue;
    MQX_TRY(status);
    newlyBacked->push_back({use.region->id, use.page});
  }
  return Status::Success;
}

void ResidencyManager::reachesEveryPage(const device::Fence& fence) {
  ++reachAllCount_;
  // Fences of one slot (stream) are reached in order: the newest stands for
  // the older ones, so the list holds one fence per stream at most, however
  // many launches a program makes without anyone asking.
  for (device::Fence& known : reachAll_)
    if (known.slot == fence.slot) {
      known.value = std::max(known.value, fence.value);
      return;
    }
  reachAll_.push_back(fence);
}

bool ResidencyManager::everyPageReachable() {
  std::erase_if(reachAll_, [&](const device::Fence& fence) { return context_.backend.fenceReached(fence); });
  return !reachAll_.empty();
}

Status ResidencyManager::mapToHost(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  MQX_TRY(adoptBlock(region, index));
  // Its swap image's slot, else a new one, which goes back unless mapped.
  SwapSlot newBlock;
  if (page.host().kind != HostImageKind::Swap)
    newBlock = context_.slots.acquire(region.pageMappedBytes(index), true, true);
  std::byte* slot = newBlock ? newBlock.get() : page.host().slot;
  const device::HostBlock* block = slot != nullptr ? context_.slots.blockOf(slot) : nullptr;
  // No log here: the callers leave the page unmapped and say so once per
  // process (leaveUnmapped); a line per page would flood the log.
  if (block == nullptr) return Status::OutOfMemory;
  MQX_TRY(context_.backend.mapHost(region.pageAddress(index), *block));
  newBlock.commit(); // mapped under the page
  MQX_TRY(PageStore::mappedToBacking(page, slot));
  ++stateVersion_;
  if (page.pending()) ++pendingPagesMade_;
  return Status::Success;
}

Status ResidencyManager::mapNewRegion(Region& region) {
  for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
    const std::size_t pageBytes = region.pageMappedBytes(i);
    Status status = Status::OutOfMemory;
    if (context_.budget.tryAcquire(pageBytes)) {
      status = context_.backend.map(region.pageAddress(i), pageBytes);
      if (ok(status))
        MQX_TRY(PageStore::mappedToDevice(region.pages[i]));
      else
        context_.budget.release(pageBytes);
    }
    if (!ok(status)) status = mapToHost(region, i);
    if (!ok(status)) leaveUnmapped(status); // backed at its first use, as without host blocks
  }
  noteStateChange();
  publish(region);
  return Status::Success;
}

Status ResidencyManager::adoptBlock(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  if (page.host().kind != HostImageKind::Swap || context_.slots.blockOf(page.host().slot) != nullptr)
    return Status::Success;
  // A swap image in pageable memory (no block could be had when it was
  // made) moves to a block, which the page can map; if none can be had
  // either, the image stays and the page keeps its device memory.
  SwapSlot block = context_.slots.acquire(region.pageMappedBytes(index), true, true);
  if (!block) return Status::Success;
  std::memcpy(block.get(), page.host().slot, region.pageDataBytes(index));
  return handBack(region, index, PageStore::imageCopied(page, block.get()), block);
}

Status ResidencyManager::materialize(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  if (!page.pending()) return Status::Success;
  // Written by the CPU: the page is not backed, and no in-flight work
  // reaches a pending page (every launch that may reach it materializes it
  // first, and lazy writes happen only to pages no work reaches).
  readHostImage(page.host(), 0, region.pageDataBytes(index), page.backing());
  context_.statistics.bytesCopiedOnHost += region.pageDataBytes(index);
  MQX_TRY(handBack(region, index, PageStore::materialized(page)));
  return Status::Success;
}

Status ResidencyManager::unbackUnloaded(Region& region, std::uint32_t index) {
  // Backed by the launch that yields, before any load: nothing to keep.
  MQX_TRY(context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index)));
  context_.budget.release(region.pageMappedBytes(index));
  MQX_TRY(PageStore::unbacked(region.pages[index]));
  if (mapsHost())
    if (Status status = mapToHost(region, index); !ok(status)) leaveUnmapped(status);
  return Status::Success;
}

Status ResidencyManager::back(Region& region, std::uint32_t index, const std::vector<RegionId>& keep) {
  const std::size_t bytes = region.pageMappedBytes(index);
  std::vector<PeerCandidate> refused; // other processes' regions whose owners freed nothing
  for (;;) {
    if (context_.budget.tryAcquire(bytes)) {
      // A page on its host block leaves it first (no in-flight work reaches
      // it: backAll checked); its block stays as its swap image if it holds
      // the page's bytes, else it goes back to the swap buffer.
      PageState& page = region.pages[index];
      std::byte* backing = page.backing();
      if (backing != nullptr) MQX_TRY(context_.backend.unmap(region.pageAddress(index), bytes));
      Status status = context_.backend.map(region.pageAddress(index), bytes);
      if (ok(status)) {
        MQX_TRY(PageStore::mappedToDevice(page));
        const bool image = page.host().kind == HostImageKind::Swap && page.host().slot == backing;
        if (backing != nullptr && !image) context_.slots.release(backing, bytes);
        return Status::Success;
      }
      if (backing != nullptr) {
        const device::HostBlock* block = context_.slots.blockOf(backing);
        Status restored =
            block != nullptr ? context_.backend.mapHost(region.pageAddress(index), *block) : Status::Unknown;
        if (!ok(restored)) {
          log(LogLevel::Error, "a page lost its host mapping: {}", toString(restored));
          return restored;
        }
      }
      context_.budget.release(bytes);
      if (status != Status::OutOfMemory) return status;
      // The device is fuller than our budget says (other users, or
      // fragmentation): evict something and retry, as the paper's two-round
      // allocation does (§6).
      log(LogLevel::Debug, "device map of {} bytes failed within budget; evicting and retrying", bytes);
    }
    Status evicted = evictOne(keep, bytes, &refused);
    if (evicted == Status::NotFound) {
      // Nothing of ours is evictable and no published region of another
      // process was freed: the other processes are asked for anything
      // (paper §6).
      // Only the answer decides: checking mustYield() again here raced with
      // the older process getting its memory, and failed this operation
      // with out of memory although it only had to retry.
      switch (peerEviction_.reclaimElsewhere(bytes)) {
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

void ResidencyManager::waitForSourceReads() {
  if (!sourceReadsInFlight_) return;
  auto& backend = context_.backend;
  // A failed wait is a broken context (its error is sticky): the program's
  // next CUDA call reports it.
  if (Status waited = backend.synchronize(backend.transferStream(device::TransferDirection::ToDevice)); !ok(waited))
    log(LogLevel::Error, "waiting for the loads that read the program's buffers: {}", toString(waited));
  sourceReadsInFlight_ = false;
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

void ResidencyManager::unpin(const PendingWork& work) {
  forEachPage(work.pages, [](PageState& page) {
    // A refusal (more unpins than pins) is logged by the page store; the
    // other pages still unpin.
    [[maybe_unused]] const Status unpinned = PageStore::unpin(page);
    return true;
  });
}

void ResidencyManager::poll() {
  context_.slots.reclaim(false);
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

Status ResidencyManager::waitUnpinned(const Region& region) {
  poll();
  // Work that may reach every page reaches this region too.
  while (mapsHost() && everyPageReachable())
    MQX_TRY(context_.backend.waitFence(reachAll_.front()));
  while (region.anyPinned()) {
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
  context_.slots.reclaim(true);
  waitForSourceReads();
  return Status::Success;
}

void ResidencyManager::leaveUnmapped(Status why) {
  // No host block to be had (the system refuses to pin more memory): the
  // page is left unmapped, as where the device cannot map host memory at all
  // (docs/architecture.md, decision 2). Its bytes are safe in its image; a
  // kernel that reaches it unforeseen faults. Said once per process.
  if (warnedUnmapped_) return;
  warnedUnmapped_ = true;
  log(LogLevel::Warn, "no host block for a page that is not resident ({}): such pages stay unmapped", toString(why));
}

Status ResidencyManager::readDeviceToSlot(Region& region, std::uint32_t index, std::byte* slot) {
  auto& backend = context_.backend;
  const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
  MQX_TRY(backend.order(backend.transferStream(device::TransferDirection::ToDevice), toHost));
  MQX_TRY(backend.copyToHost(slot, region.pageAddress(index), region.pageDataBytes(index), toHost,
                             context_.slots.pinned()));
  device::Fence done;
  MQX_TRY(backend.enqueueFence(toHost, &done));
  MQX_TRY(backend.waitFence(done));
  context_.statistics.bytesToHost += region.pageDataBytes(index);
  return Status::Success;
}

Status ResidencyManager::releaseRegion(Region& region) {
  // Every page's host image first, then its mappings: the region goes, and
  // so does each page's host block.
  std::vector<PageState> previous(region.pageCount());
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    MQX_TRY(PageStore::released(region.pages[index], previous[index]));
    releaseImageHeld(region, index, previous[index].host(), previous[index].backing());
  }
  // Every page lets go, whatever one unmap says: the region is gone either way.
  FirstFailure unmapped;
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    const PageState& page = previous[index];
    if (page.hostMapped()) {
      unmapped.note(context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index)));
      context_.slots.release(page.backing(), region.pageMappedBytes(index));
    }
    if (!page.backed()) continue;
    unmapped.note(context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index)));
    context_.budget.release(region.pageMappedBytes(index));
  }
  publish(region); // nothing resident: withdrawn
  return unmapped.status();
}

Status ResidencyManager::handBack(const Region& region, std::uint32_t index, PreviousImage previous) {
  if (!previous.accepted()) return previous.status();
  releaseImageHeld(region, index, previous.take(), region.pages[index].backing());
  return Status::Success;
}

Status ResidencyManager::handBack(const Region& region, std::uint32_t index, PreviousImage previous, SwapSlot& taken) {
  if (previous.accepted()) taken.commit(); // the page's image now
  return handBack(region, index, std::move(previous));
}

void ResidencyManager::releaseImageHeld(const Region& region, std::uint32_t index, const HostImage& image,
                                        const std::byte* backing) {
  if (image.kind == HostImageKind::None) return;
  if (image.kind == HostImageKind::CowSource) {
    waitForSourceReads();
    const std::size_t bytes = image.protectedBytes(region.pageDataBytes(index));
    context_.cow.unprotect(image.protectedStart(), bytes, PageKey{region.id, index});
  } else if (image.kind == HostImageKind::Swap && image.slot != backing) {
    context_.slots.quarantine(image.slot, region.pageMappedBytes(index));
  } // a page's host block stays mapped under it (until the region goes)
  ++stateVersion_;
}

} // namespace mqx
