// ResidencyManager's eviction half (docs/architecture.md decision 8, paper
// §4 and §6): choosing victims among this process's regions and the
// published regions of other processes, writing dirty pages back to the
// swap buffer and mapping host blocks under the pages that leave device
// memory. Residency (backing, loads, pins) is in residency_manager.cpp.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "common/log.hpp"
#include "core/page_store.hpp"
#include "core/residency_manager.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

bool contains(const std::vector<RegionId>& ids, RegionId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The write-backs an eviction issued into its slots. On an early return the
// slots go back (their SwapSlots go out of scope) only once the
// device-to-host stream has passed the copies; when that cannot be waited
// for, they are lost rather than reused while a copy may still write them.
class WriteBacksInFlight {
public:
  WriteBacksInFlight(device::DeviceBackend& backend, StreamHandle toHost) : backend_(backend), toHost_(toHost) {}
  WriteBacksInFlight(const WriteBacksInFlight&) = delete;
  WriteBacksInFlight& operator=(const WriteBacksInFlight&) = delete;
  ~WriteBacksInFlight() {
    // A slot a page took (committed) needs nothing more.
    if (std::ranges::none_of(slots_, [](const SwapSlot* slot) { return static_cast<bool>(*slot); })) return;
    if (Status waited = backend_.synchronize(toHost_); !ok(waited)) {
      log(LogLevel::Error, "waiting for the write-backs of a failed eviction: {}; their slots are not reused",
          toString(waited));
      for (SwapSlot* slot : slots_)
        slot->abandon();
    }
  }
  void issued(SwapSlot& slot) { slots_.push_back(&slot); }

private:
  device::DeviceBackend& backend_;
  StreamHandle toHost_;
  std::vector<SwapSlot*> slots_;
};

} // namespace

std::vector<ResidencyManager::Victim> ResidencyManager::candidates(const std::vector<RegionId>& keep,
                                                                   std::vector<EvictionCandidate>* out) {
  std::vector<Victim> victims;
  // In-flight work that may reach every page: none may be remapped.
  if (mapsHost() && everyPageReachable()) return victims;
  const bool pageGranular = context_.options.evictionGranularity == EvictionGranularity::Page;
  context_.directory.forEach([&](Region& region) {
    if (contains(keep, region.id)) return;
    if (pageGranular) {
      for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
        const PageState& page = region.pages[i];
        if (!page.backed() || page.pinned()) continue;
        out->push_back({victims.size(), region.pageMappedBytes(i), page.dirty() ? region.pageDataBytes(i) : 0,
                        page.lastUse(), page.useCount()});
        victims.push_back({&region, {i}});
      }
      return;
    }
    // Region granularity (the paper): a region is swappable when none of
    // its pages is in use.
    if (region.anyPinned()) return;
    Victim victim{&region, {}};
    for (std::uint32_t i = 0; i < region.pageCount(); ++i)
      if (region.pages[i].backed()) victim.pages.push_back(i);
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
  const bool pageGranular = context_.options.evictionGranularity == EvictionGranularity::Page;
  Victim victim{region, {}};
  if (pageGranular || !region->anyPinned())
    for (std::uint32_t i = 0; i < region->pageCount(); ++i)
      if (region->pages[i].backed() && !region->pages[i].pinned()) victim.pages.push_back(i);
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
  const auto started = std::chrono::steady_clock::now();
  trace::TraceSpan span(context_.trace, "evict", "eviction", trace::kCurrentThreadTrack);
  span.argument("region", region.id).argument("bytes", victimBytes(victim)).argument("pages", victim.pages.size());
  const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
  // Loads into these pages ran on the other DMA stream; write-backs must see
  // them.
  MQX_TRY(backend.order(backend.transferStream(device::TransferDirection::ToDevice), toHost));

  // Every slot first: a full swap buffer fails the eviction before any copy.
  // Where pages map host blocks, a clean page without a swap image needs a
  // block to map too (it is then pending: its image is written there before
  // any launch reaches it). A slot no page took by the end goes back, on
  // every path out of here.
  std::vector<WriteBack> writeBacks;
  std::vector<WriteBack> blocks; // clean pages' new host blocks
  ++stateVersion_;
  for (std::uint32_t index : victim.pages) {
    if (mapsHost()) MQX_TRY(adoptBlock(region, index));
    const PageState& page = region.pages[index];
    const bool needsBlock =
        mapsHost() && !page.dirty() &&
        (page.host().kind != HostImageKind::Swap || context_.slots.blockOf(page.host().slot) == nullptr);
    if (!page.dirty() && !needsBlock) continue;
    // A dirty page's slot: a block if one can be had, else pageable memory
    // (the page is then left unmapped: see leaveUnmapped). A clean page
    // without a block stays unmapped likewise.
    SwapSlot slot = context_.slots.acquire(region.pageMappedBytes(index), false, !page.dirty());
    if (!slot && !page.dirty()) continue;
    if (!slot) {
      log(LogLevel::Warn, "swap buffer full ({} bytes): cannot evict", context_.slots.limit());
      return Status::OutOfMemory;
    }
    (page.dirty() ? writeBacks : blocks).push_back(WriteBack{index, std::move(slot), {}});
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
  WriteBacksInFlight inFlight(backend, toHost); // after writeBacks: gone before their slots
  for (WriteBack& writeBack : writeBacks) {
    MQX_TRY(backend.copyToHost(writeBack.slot.get(), region.pageAddress(writeBack.index),
                               region.pageDataBytes(writeBack.index), toHost, context_.slots.pinned()));
    inFlight.issued(writeBack.slot);
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
    stats.bytesDroppedClean += page.deviceValid() ? region.pageDataBytes(index) : 0;
    PageBacking backing{index, page.host().kind == HostImageKind::Swap ? page.host().slot : nullptr};
    for (WriteBack& block : blocks)
      if (block.index == index) backing.newBlock = std::move(block.slot);
    if (page.host().kind == HostImageKind::Swap && backing.newBlock) { // a pageable image moves to its block
      std::memcpy(backing.newBlock.get(), page.host().slot, region.pageDataBytes(index));
      backing.slot = backing.newBlock.get(); // the page's image now
      MQX_TRY(handBack(region, index, PageStore::imageCopied(page, backing.slot), backing.newBlock));
    }
    MQX_TRY(releaseDevicePage(region, index));
    backings.push_back(std::move(backing));
  }
  for (WriteBack& writeBack : writeBacks) {
    MQX_TRY(backend.waitFence(writeBack.done));
    MQX_TRY(PageStore::wroteBack(region.pages[writeBack.index], writeBack.slot.get()));
    std::byte* slot = writeBack.slot.commit(); // the page's image
    stats.bytesWrittenBack += region.pageDataBytes(writeBack.index);
    stats.bytesToHost += region.pageDataBytes(writeBack.index);
    MQX_TRY(releaseDevicePage(region, writeBack.index));
    backings.push_back(PageBacking{writeBack.index, slot});
    batchBytes += region.pageMappedBytes(writeBack.index);
    if (batchBytes >= kMappingBatchBytes && &writeBack != &writeBacks.back()) {
      MQX_TRY(mapBackings(region, backings));
      backings.clear();
      batchBytes = 0;
    }
  }
  writing.reset();
  MQX_TRY(mapBackings(region, backings));
  ++stats.evictions;
  stats.evictionNanoseconds += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  evictedSinceWriteAhead_ = true;
  span.argument("written_back", writeBacks.size());
  if (span.active()) traceUsage();
  return Status::Success;
}

Status ResidencyManager::releaseDevicePage(Region& region, std::uint32_t index) {
  MQX_TRY(context_.backend.unmap(region.pageAddress(index), region.pageMappedBytes(index)));
  context_.budget.release(region.pageMappedBytes(index));
  MQX_TRY(PageStore::unbacked(region.pages[index]));
  ++context_.statistics.pagesEvicted;
  return Status::Success;
}

Status ResidencyManager::mapBackings(Region& region, std::span<PageBacking> backings) {
  if (!mapsHost()) return Status::Success;
  // Adjacent pages in address order, so that the backend sets access once
  // per run.
  std::ranges::sort(backings, {}, &PageBacking::index);
  std::vector<device::HostMapping> batch;
  std::vector<PageBacking*> batched;
  for (PageBacking& backing : backings) {
    std::byte* slot = backing.newBlock ? backing.newBlock.get() : backing.slot;
    const device::HostBlock* block = slot != nullptr ? context_.slots.blockOf(slot) : nullptr;
    if (block != nullptr) {
      batch.push_back(device::HostMapping{region.pageAddress(backing.index), *block});
      batched.push_back(&backing);
    } else if (Status status = mapToHost(region, backing.index); !ok(status)) {
      leaveUnmapped(status);
    }
  }
  if (batch.empty()) return Status::Success;
  if (Status status = context_.backend.mapHostBlocks(batch); !ok(status)) {
    leaveUnmapped(status); // the new blocks go back with `backings`
    return Status::Success;
  }
  ++stateVersion_;
  for (PageBacking* backing : batched) {
    PageState& page = region.pages[backing->index];
    std::byte* slot = backing->newBlock ? backing->newBlock.commit() : backing->slot; // mapped under the page
    MQX_TRY(PageStore::mappedToBacking(page, slot));
    if (page.pending()) ++pendingPagesMade_;
  }
  return Status::Success;
}

} // namespace mqx
