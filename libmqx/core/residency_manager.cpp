#include "core/residency_manager.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/log.hpp"
#include "core/host_image.hpp"
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

const char* loadName(HostImageKind kind) {
  switch (kind) {
  case HostImageKind::Zero: return "load (zero fill)";
  case HostImageKind::Fill: return "load (memset fill)";
  case HostImageKind::CowSource: return "load H2D (application buffer)";
  case HostImageKind::Swap: return "load H2D (swap buffer)";
  default: return "load";
  }
}

} // namespace

ResidencyManager::ResidencyManager(ResidencyContext context, std::unique_ptr<ReplacementPolicy> policy)
    : context_(context), policy_(std::move(policy)),
      peerEviction_(context.config, context.budget, context.statistics, context.trace, *this) {}

Status ResidencyManager::makeResident(std::span<const PageUse> uses, StreamHandle stream) {
  const auto start = std::chrono::steady_clock::now();
  trace::TraceSpan span(context_.trace, "make resident", "residency", trace::kCurrentThreadTrack);
  span.argument("pages", uses.size());
  std::vector<RegionId> keep;
  std::size_t needed = 0;
  for (const auto& use : uses) {
    if (!contains(keep, use.region->id)) keep.push_back(use.region->id);
    needed += use.region->pages[use.page].backed ? 0 : use.region->pageMappedBytes(use.page);
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
      std::chrono::steady_clock::now() + 4 * std::chrono::milliseconds(context_.config.evictionTimeoutMilliseconds);
  while (backed == Status::NotReady) {
    for (const PageKey& key : newlyBacked)
      unbackUnloaded(*context_.directory.byId(key.region), key.page);
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
  // Loads of neighbouring pages from one contiguous source become one
  // transfer: a lazy copy of a large buffer is then loaded at the rate of
  // one large copy, not of many page-sized ones.
  std::vector<Load> loads;
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (!page.backed) { // runs from its host block
      if (reads(use.access)) materialize(*use.region, use.page);
      continue;
    }
    if (reads(use.access) && !page.deviceValid) {
      if (page.host.kind == HostImageKind::None) return Status::Unknown; // invariant: never both gone
      addLoads(loads, use.region->pageAddress(use.page), page.host, use.region->pageDataBytes(use.page));
      page.deviceValid = true;
    }
  }
  for (const Load& load : loads)
    MQX_TRY(issue(load));
  auto& backend = context_.backend;
  if (!loads.empty()) MQX_TRY(backend.order(backend.transferStream(device::TransferDirection::ToDevice), stream));
  context_.statistics.residencyWaitNanoseconds += nanosecondsSince(start);
  span.argument("loads", loads.size());
  if (span.active()) traceUsage();
  return Status::Success;
}

void ResidencyManager::traceUsage() {
  context_.trace->record(trace::counterEvent("device budget used", "bytes", context_.budget.used()));
  context_.trace->record(trace::counterEvent("swap buffer used", "bytes", context_.swap.usedBytes()));
}

Status ResidencyManager::backAll(std::span<const PageUse> uses, const std::vector<RegionId>& keep,
                                 std::vector<PageKey>* newlyBacked, bool hostFallback) {
  for (const auto& use : uses) {
    PageState& page = use.region->pages[use.page];
    if (page.backed) continue;
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
  adoptBlock(region, index);
  const bool ownSlot = page.host.kind == HostImageKind::Swap;
  std::byte* slot = ownSlot ? page.host.slot : acquireSlot(region.pageMappedBytes(index), true, true);
  const device::HostBlock* block = slot != nullptr ? context_.swap.blockOf(slot) : nullptr;
  if (block == nullptr) {
    // No log here: the callers leave the page unmapped and say so once per
    // process (leaveUnmapped); a line per page would flood the log.
    if (slot != nullptr && !ownSlot) context_.swap.release(slot, region.pageMappedBytes(index));
    return Status::OutOfMemory;
  }
  if (Status status = context_.backend.mapHost(region.pageAddress(index), *block); !ok(status)) {
    if (!ownSlot) context_.swap.release(slot, region.pageMappedBytes(index));
    return status;
  }
  page.backing = slot;
  ++stateVersion_;
  if (page.pending()) ++pendingPagesMade_;
  return Status::Success;
}

void ResidencyManager::adoptBlock(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  if (page.host.kind != HostImageKind::Swap || context_.swap.blockOf(page.host.slot) != nullptr) return;
  // A swap image in pageable memory (no block could be had when it was
  // made) moves to a block, which the page can map; if none can be had
  // either, the image stays and the page keeps its device memory.
  std::byte* block = acquireSlot(region.pageMappedBytes(index), true, true);
  if (block == nullptr) return;
  std::memcpy(block, page.host.slot, region.pageDataBytes(index));
  quarantine(page.host.slot, region.pageMappedBytes(index));
  page.host = HostImage::inSwap(block);
}

void ResidencyManager::materialize(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  if (!page.pending()) return;
  // Written by the CPU: the page is not backed, and no in-flight work
  // reaches a pending page (every launch that may reach it materializes it
  // first, and lazy writes happen only to pages no work reaches).
  readHostImage(page.host, 0, region.pageDataBytes(index), page.backing);
  context_.statistics.bytesCopiedOnHost += region.pageDataBytes(index);
  std::byte* backing = page.backing;
  releaseHostImage(region, index);
  page.host = HostImage::inSwap(backing);
}

void ResidencyManager::unbackUnloaded(Region& region, std::uint32_t index) {
  // Backed by the launch that yields, before any load: nothing to keep.
  context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index));
  context_.budget.release(region.pageMappedBytes(index));
  region.pages[index].backed = false;
  region.pages[index].deviceValid = false;
  if (mapsHost())
    if (Status status = mapToHost(region, index); !ok(status)) leaveUnmapped(status);
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
      std::byte* backing = page.backing;
      if (backing != nullptr) MQX_TRY(context_.backend.unmap(region.pageAddress(index), bytes));
      Status status = context_.backend.map(region.pageAddress(index), bytes);
      if (ok(status)) {
        page.backed = true;
        page.backing = nullptr;
        const bool image = page.host.kind == HostImageKind::Swap && page.host.slot == backing;
        if (backing != nullptr && !image) context_.swap.release(backing, bytes);
        return Status::Success;
      }
      if (backing != nullptr) {
        const device::HostBlock* block = context_.swap.blockOf(backing);
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

// A page whose source has saved edges loads in up to three parts: the edges
// from where they were saved, the rest from the application's buffer (which
// still merges with the neighbouring pages' loads).
void ResidencyManager::addLoads(std::vector<Load>& loads, DevicePtr address, const HostImage& image,
                                std::size_t bytes) {
  if (image.kind != HostImageKind::CowSource || !image.edges) return addLoad(loads, {address, image, bytes});
  const SourceEdges& edges = *image.edges;
  if (edges.headBytes != 0) addLoad(loads, {address, HostImage::inBuffer(edges.head()), edges.headBytes});
  addLoad(loads, {address + edges.headBytes, HostImage::inBuffer(image.protectedStart()), image.protectedBytes(bytes)});
  if (edges.tailBytes != 0)
    addLoad(loads, {address + edges.tailStart, HostImage::inBuffer(edges.tail()), edges.tailBytes});
}

void ResidencyManager::addLoad(std::vector<Load>& loads, const Load& load) {
  if (!loads.empty()) {
    Load& last = loads.back();
    const bool adjacent = last.address + last.bytes == load.address && last.image.kind == load.image.kind;
    const HostImage& a = last.image;
    const HostImage& b = load.image;
    bool merge = false;
    if (adjacent && a.kind == HostImageKind::CowSource) merge = a.source + last.bytes == b.source;
    if (adjacent && a.kind == HostImageKind::Zero) merge = true;
    if (adjacent && a.kind == HostImageKind::Fill)
      merge = a.pattern == b.pattern && a.elementSize == b.elementSize && last.bytes % a.elementSize == 0;
    if (merge) {
      last.bytes += load.bytes;
      return;
    }
  }
  loads.push_back(load);
}

Status ResidencyManager::issue(const Load& load) {
  auto& backend = context_.backend;
  auto& stats = context_.statistics;
  const StreamHandle stream = backend.transferStream(device::TransferDirection::ToDevice);
  // The span is the load's issue on the H2D track: the copy itself is
  // asynchronous on the GPU (on sim it runs inside the call).
  trace::TraceSpan span(context_.trace, loadName(load.image.kind), "transfer", trace::kToDeviceTrack);
  span.argument("bytes", load.bytes);
  switch (load.image.kind) {
  case HostImageKind::None: return Status::Unknown;
  case HostImageKind::Zero:
    stats.bytesFilledOnDevice += load.bytes;
    return backend.fill(load.address, 0, 1, load.bytes, stream);
  case HostImageKind::Fill:
    stats.bytesFilledOnDevice += load.bytes;
    return backend.fill(load.address, load.image.pattern, load.image.elementSize, load.bytes / load.image.elementSize,
                        stream);
  case HostImageKind::CowSource:
    sourceReadsInFlight_ = true;
    stats.bytesToDevice += load.bytes;
    return backend.copyToDevice(load.address, load.image.source, load.bytes, stream, false);
  case HostImageKind::Swap:
    loadsInFlight_ = true;
    stats.bytesToDevice += load.bytes;
    return backend.copyToDevice(load.address, load.image.slot, load.bytes, stream, context_.swap.pinned());
  }
  return Status::Unknown;
}

void ResidencyManager::waitForSourceReads() {
  if (!sourceReadsInFlight_) return;
  auto& backend = context_.backend;
  backend.synchronize(backend.transferStream(device::TransferDirection::ToDevice));
  sourceReadsInFlight_ = false;
}

template <typename Function>
void ResidencyManager::forEachPage(const std::vector<PageKey>& pages, Function&& function) {
  // Keys come grouped by region: one directory lookup per region, not per page.
  Region* region = nullptr;
  for (const auto& key : pages) {
    if (region == nullptr || region->id != key.region) region = context_.directory.byId(key.region);
    if (region != nullptr) function(region->pages[key.page]);
  }
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
  forEachPage(work.pages, [](PageState& page) { ++page.pins; });
  pending_.push_back(std::move(work));
  return Status::Success;
}

void ResidencyManager::unpin(const PendingWork& work) {
  forEachPage(work.pages, [](PageState& page) { --page.pins; });
}

void ResidencyManager::quarantine(std::byte* slot, std::size_t bytes) {
  auto& backend = context_.backend;
  device::Fence fence;
  if (!loadsInFlight_ ||
      !ok(backend.enqueueFence(backend.transferStream(device::TransferDirection::ToDevice), &fence))) {
    if (loadsInFlight_) backend.synchronize(backend.transferStream(device::TransferDirection::ToDevice));
    context_.swap.release(slot, bytes);
    return;
  }
  quarantine_.push_back({fence, slot, bytes});
}

std::byte* ResidencyManager::acquireSlot(std::size_t bytes, bool overLimit, bool needBlock) {
  std::byte* slot = context_.swap.acquire(bytes, false, needBlock);
  if (slot == nullptr && !quarantine_.empty()) {
    reclaimQuarantine(true);
    slot = context_.swap.acquire(bytes, false, needBlock);
  }
  if (slot == nullptr && overLimit) slot = context_.swap.acquire(bytes, true, needBlock);
  return slot;
}

void ResidencyManager::reclaimQuarantine(bool wait) {
  std::erase_if(quarantine_, [&](const QuarantinedSlot& entry) {
    if (wait) context_.backend.waitFence(entry.fence);
    if (!context_.backend.fenceReached(entry.fence)) return false;
    context_.swap.release(entry.slot, entry.bytes);
    return true;
  });
  if (quarantine_.empty() && wait) loadsInFlight_ = false;
}

void ResidencyManager::poll() {
  reclaimQuarantine(false);
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
  reclaimQuarantine(true);
  waitForSourceReads();
  return Status::Success;
}

std::vector<ResidencyManager::Victim> ResidencyManager::candidates(const std::vector<RegionId>& keep,
                                                                   std::vector<EvictionCandidate>* out) {
  std::vector<Victim> victims;
  // In-flight work that may reach every page: none may be remapped.
  if (mapsHost() && everyPageReachable()) return victims;
  const bool pageGranular = context_.config.evictionGranularity == EvictionGranularity::Page;
  context_.directory.forEach([&](Region& region) {
    if (contains(keep, region.id)) return;
    if (pageGranular) {
      for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
        const PageState& page = region.pages[i];
        if (!page.backed || page.pinned()) continue;
        out->push_back({victims.size(), region.pageMappedBytes(i), page.dirty() ? region.pageDataBytes(i) : 0,
                        page.lastUse, page.useCount});
        victims.push_back({&region, {i}});
      }
      return;
    }
    // Region granularity (the paper): a region is swappable when none of
    // its pages is in use.
    if (region.anyPinned()) return;
    Victim victim{&region, {}};
    for (std::uint32_t i = 0; i < region.pageCount(); ++i)
      if (region.pages[i].backed) victim.pages.push_back(i);
    if (victim.pages.empty()) return;
    out->push_back({victims.size(), region.backedBytes(), region.dirtyBytes(), region.lastUse, region.useCount});
    victims.push_back(std::move(victim));
  });
  return victims;
}

Status ResidencyManager::evictOne(const std::vector<RegionId>& keep, std::size_t bytes,
                                  std::vector<PeerCandidate>* refused) {
  for (;;) {
    poll();
    std::vector<EvictionCandidate> list;
    auto victims = candidates(keep, &list);
    // Paper §6: with other processes on the node, the victim is chosen by
    // the same policy among their published regions too (their last uses are
    // on the node clock, like ours).
    std::vector<PeerCandidate> peers;
    peerEviction_.collect(*refused, &peers);
    const std::size_t local = list.size();
    for (std::size_t i = 0; i < peers.size(); ++i) {
      list.push_back(peers[i].inputs);
      list.back().id = local + i;
    }
    if (!list.empty()) {
      const std::uint64_t choice = list[policy_->chooseVictim(list)].id;
      if (choice >= local) {
        if (ok(peerEviction_.evictAt(peers[choice - local], bytes, refused))) return Status::Success;
        continue; // its owner freed nothing: choose again without it
      }
      MQX_TRY(evict(victims[choice]));
      publish(*victims[choice].region);
      return Status::Success;
    }
    if (pending_.empty()) return Status::NotFound;
    // Everything evictable is in use: wait for the oldest work to finish.
    ++context_.statistics.fenceWaits;
    trace::TraceSpan wait(context_.trace, "fence wait", "wait", trace::kCurrentThreadTrack);
    MQX_TRY(context_.backend.waitFence(pending_.front().fence));
  }
}

std::size_t ResidencyManager::victimBytes(const Victim& victim) const {
  std::size_t size = 0;
  for (std::uint32_t index : victim.pages)
    size += victim.region->pageMappedBytes(index);
  return size;
}

std::size_t ResidencyManager::evictRegionNow(RegionId id) {
  poll();
  Region* region = context_.directory.byId(id);
  if (region == nullptr) return 0;
  const bool pageGranular = context_.config.evictionGranularity == EvictionGranularity::Page;
  Victim victim{region, {}};
  if (pageGranular || !region->anyPinned())
    for (std::uint32_t i = 0; i < region->pageCount(); ++i)
      if (region->pages[i].backed && !region->pages[i].pinned()) victim.pages.push_back(i);
  const std::size_t size = victimBytes(victim);
  std::size_t freed = 0;
  if (!victim.pages.empty() && ok(evict(victim))) freed = size;
  publish(*region);
  return freed;
}

std::size_t ResidencyManager::evictBestNow() {
  poll();
  std::vector<EvictionCandidate> list;
  auto victims = candidates({}, &list);
  if (list.empty()) return 0;
  const Victim& victim = victims[list[policy_->chooseVictim(list)].id];
  const std::size_t size = victimBytes(victim);
  if (!ok(evict(victim))) return 0;
  publish(*victim.region);
  return size;
}

Status ResidencyManager::evict(const Victim& victim) {
  auto& backend = context_.backend;
  auto& stats = context_.statistics;
  Region& region = *victim.region;
  trace::TraceSpan span(context_.trace, "evict", "eviction", trace::kCurrentThreadTrack);
  span.argument("region", region.id).argument("bytes", victimBytes(victim)).argument("pages", victim.pages.size());
  const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
  // Loads into these pages ran on the other DMA stream; write-backs must see
  // them.
  MQX_TRY(backend.order(backend.transferStream(device::TransferDirection::ToDevice), toHost));

  // Every slot first: a full swap buffer fails the eviction before any copy.
  // Where pages map host blocks, a clean page without a swap image needs a
  // block to map too (it is then pending: its image is written there before
  // any launch reaches it).
  std::vector<WriteBack> writeBacks;
  std::vector<WriteBack> blocks; // clean pages' new host blocks
  ++stateVersion_;
  for (std::uint32_t index : victim.pages) {
    if (mapsHost()) adoptBlock(region, index);
    const PageState& page = region.pages[index];
    const bool needsBlock = mapsHost() && !page.dirty() &&
                            (page.host.kind != HostImageKind::Swap || context_.swap.blockOf(page.host.slot) == nullptr);
    if (!page.dirty() && !needsBlock) continue;
    // A dirty page's slot: a block if one can be had, else pageable memory
    // (the page is then left unmapped: see leaveUnmapped). A clean page
    // without a block stays unmapped likewise.
    std::byte* slot = acquireSlot(region.pageMappedBytes(index), false, !page.dirty());
    if (slot == nullptr && !page.dirty()) continue;
    if (slot == nullptr) {
      for (const auto* list : {&writeBacks, &blocks})
        for (const WriteBack& done : *list)
          context_.swap.release(done.slot, region.pageMappedBytes(done.index));
      log(LogLevel::Warn, "swap buffer full ({} bytes): cannot evict", context_.swap.limit());
      return Status::OutOfMemory;
    }
    (page.dirty() ? writeBacks : blocks).push_back(WriteBack{index, slot, {}});
  }
  // The write-backs as one span on the D2H track, from the first copy's
  // issue to the last one's completion (they run back to back).
  std::optional<trace::TraceSpan> writing;
  if (context_.trace != nullptr && !writeBacks.empty()) {
    writing.emplace(context_.trace, "write-back", "transfer", trace::kToHostTrack);
    std::uint64_t dirty = 0;
    for (const WriteBack& writeBack : writeBacks)
      dirty += region.pageDataBytes(writeBack.index);
    writing->argument("bytes", dirty).argument("region", region.id);
  }
  // One fence per page, so that each page is unmapped as soon as its own
  // write-back is done while the later ones still run: unmapping (about
  // 0.04 ms per page on an H100, bench/gpu/vmm_costs.cpp) then hides behind
  // the copies instead of following all of them.
  for (WriteBack& writeBack : writeBacks) {
    MQX_TRY(backend.copyToHost(writeBack.slot, region.pageAddress(writeBack.index),
                               region.pageDataBytes(writeBack.index), toHost, context_.swap.pinned()));
    MQX_TRY(backend.enqueueFence(toHost, &writeBack.done));
  }
  // Clean pages give their device memory back while the write-backs run,
  // and so does each dirty page as soon as its own write-back is done.
  // Host blocks are mapped under them in batches of adjacent pages while
  // later write-backs still run. On an H100 (bench/gpu/vmm_costs.cpp) giving
  // the device access to 8 MiB of host block costs ~0.14 ms, as long as
  // copying it, and each call made while copies run costs ~0.3 ms more: one
  // call per page would double an eviction's time, one call after the last
  // write-back would add the whole mapping to it.
  constexpr std::size_t kMappingBatchBytes = 64u << 20;
  std::vector<PageBacking> backings;
  std::size_t batchBytes = 0;
  for (std::uint32_t index : victim.pages) {
    PageState& page = region.pages[index];
    if (page.dirty()) continue;
    stats.bytesDroppedClean += page.deviceValid ? region.pageDataBytes(index) : 0;
    std::byte* backing = page.host.kind == HostImageKind::Swap ? page.host.slot : nullptr;
    for (const WriteBack& block : blocks)
      if (block.index == index) backing = block.slot;
    if (page.host.kind == HostImageKind::Swap && backing != page.host.slot) { // a pageable image moves to its block
      std::memcpy(backing, page.host.slot, region.pageDataBytes(index));
      quarantine(page.host.slot, region.pageMappedBytes(index));
      page.host = HostImage::inSwap(backing);
    }
    MQX_TRY(releaseDevicePage(region, index));
    backings.push_back(PageBacking{index, backing});
  }
  for (const WriteBack& writeBack : writeBacks) {
    MQX_TRY(backend.waitFence(writeBack.done));
    region.pages[writeBack.index].host = HostImage::inSwap(writeBack.slot);
    stats.bytesWrittenBack += region.pageDataBytes(writeBack.index);
    stats.bytesToHost += region.pageDataBytes(writeBack.index);
    MQX_TRY(releaseDevicePage(region, writeBack.index));
    backings.push_back(PageBacking{writeBack.index, writeBack.slot});
    batchBytes += region.pageMappedBytes(writeBack.index);
    if (batchBytes >= kMappingBatchBytes && &writeBack != &writeBacks.back()) {
      mapBackings(region, backings);
      backings.clear();
      batchBytes = 0;
    }
  }
  writing.reset();
  mapBackings(region, backings);
  ++stats.evictions;
  span.argument("written_back", writeBacks.size());
  if (span.active()) traceUsage();
  return Status::Success;
}

Status ResidencyManager::releaseDevicePage(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  MQX_TRY(context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index)));
  context_.budget.release(region.pageMappedBytes(index));
  page.backed = false;
  page.deviceValid = false;
  ++context_.statistics.pagesEvicted;
  return Status::Success;
}

void ResidencyManager::mapBackings(Region& region, std::span<const PageBacking> backings) {
  if (!mapsHost()) return;
  // Adjacent pages in address order, so that the backend sets access once
  // per run.
  std::vector<PageBacking> sorted(backings.begin(), backings.end());
  std::ranges::sort(sorted, {}, &PageBacking::index);
  std::vector<device::HostMapping> batch;
  std::vector<PageBacking> batched;
  for (const PageBacking& backing : sorted) {
    const device::HostBlock* block = backing.slot != nullptr ? context_.swap.blockOf(backing.slot) : nullptr;
    if (block != nullptr) {
      batch.push_back(device::HostMapping{region.pageAddress(backing.index), *block});
      batched.push_back(backing);
    } else if (Status status = mapToHost(region, backing.index); !ok(status)) {
      leaveUnmapped(status);
    }
  }
  if (batch.empty()) return;
  if (Status status = context_.backend.mapHostBlocks(batch); !ok(status)) {
    leaveUnmapped(status);
    return;
  }
  ++stateVersion_;
  for (const PageBacking& backing : batched) {
    PageState& page = region.pages[backing.index];
    page.backing = backing.slot;
    if (page.pending()) ++pendingPagesMade_;
  }
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
  MQX_TRY(
      backend.copyToHost(slot, region.pageAddress(index), region.pageDataBytes(index), toHost, context_.swap.pinned()));
  device::Fence done;
  MQX_TRY(backend.enqueueFence(toHost, &done));
  MQX_TRY(backend.waitFence(done));
  context_.statistics.bytesToHost += region.pageDataBytes(index);
  return Status::Success;
}

void ResidencyManager::unbackRegion(Region& region) {
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    PageState& page = region.pages[index];
    if (page.hostMapped()) { // the region goes: so does its host block (its image was released before)
      context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index));
      if (!(page.host.kind == HostImageKind::Swap && page.host.slot == page.backing))
        context_.swap.release(page.backing, region.pageMappedBytes(index));
      page.backing = nullptr;
    }
    if (!page.backed) continue;
    context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index));
    context_.budget.release(region.pageMappedBytes(index));
    page.backed = false;
    page.deviceValid = false;
  }
  publish(region); // nothing resident: withdrawn
}

void ResidencyManager::releaseHostImage(Region& region, std::uint32_t index) {
  HostImage& image = region.pages[index].host;
  if (image.kind == HostImageKind::CowSource) {
    waitForSourceReads();
    const std::size_t bytes = image.protectedBytes(region.pageDataBytes(index));
    context_.cow.unprotect(image.protectedStart(), bytes, PageKey{region.id, index});
  } else if (image.kind == HostImageKind::Swap && image.slot != region.pages[index].backing) {
    quarantine(image.slot, region.pageMappedBytes(index));
  } // a page's host block stays mapped under it: the page is now pending
  image = HostImage::of(HostImageKind::None);
  ++stateVersion_;
}

} // namespace mqx
