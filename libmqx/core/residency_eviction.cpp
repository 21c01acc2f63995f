// ResidencyManager's eviction half (docs/architecture.md decision 8, paper
// §4 and §6): choosing victims among this process's regions and the
// published regions of other processes, writing dirty pages back to the
// swap buffer, and having the page mapper map host blocks under the pages
// that leave device memory. Residency (backing, loads, pins) is in
// residency_manager.cpp.
#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "common/log.hpp"
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

bool ResidencyManager::evictable(const PageState& page) {
  return page.backed() && !mapper_.mayBeReached(page, PageAccess::Remap);
}

bool ResidencyManager::mayBeReached(const Region& region) {
  return std::ranges::any_of(region.pages,
                             [&](const PageState& page) { return mapper_.mayBeReached(page, PageAccess::Remap); });
}

std::vector<ResidencyManager::Victim> ResidencyManager::candidates(const std::vector<RegionId>& keep,
                                                                   std::vector<EvictionCandidate>* out) {
  std::vector<Victim> victims;
  const bool pageGranular = context_.options.evictionGranularity == EvictionGranularity::Page;
  context_.directory.forEach([&](Region& region) {
    if (contains(keep, region.id) || region.bytesStayOnDevice()) return;
    if (pageGranular) {
      for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
        const PageState& page = region.pages[i];
        if (!evictable(page)) continue;
        out->push_back({victims.size(), region.pageMappedBytes(i), page.dirty() ? region.pageDataBytes(i) : 0,
                        page.lastUse(), page.useCount(), page.previousUse()});
        victims.push_back({&region, {i}});
      }
      return;
    }
    // Region granularity (the paper): a region is swappable when no
    // in-flight work may reach any of its pages.
    if (mayBeReached(region)) return;
    Victim victim{&region, {}};
    for (std::uint32_t i = 0; i < region.pageCount(); ++i)
      if (region.pages[i].backed()) victim.pages.push_back(i);
    if (victim.pages.empty()) return;
    out->push_back({victims.size(), region.backedBytes(), region.dirtyBytes(), region.lastUse, region.useCount,
                    region.previousUse});
    victims.push_back(std::move(victim));
  });
  return victims;
}

Status ResidencyManager::evictOne(const std::vector<RegionId>& keep, std::size_t bytes,
                                  std::vector<PeerCandidate>* refused, const EvictionRun& run) {
  for (;;) {
    poll();
    std::vector<EvictionCandidate> list;
    auto victims = candidates(keep, &list);
    if (run.largestVictim != 0)
      std::erase_if(list, [&](const EvictionCandidate& candidate) {
        return victimBytes(victims[candidate.id]) > run.largestVictim;
      });
    // Paper §6: with other processes on the node, the victim is chosen by
    // the same policy among their published regions too (their last uses are
    // on the node clock, like ours).
    std::vector<PeerCandidate> peers;
    if (run.otherProcesses) peers_.collect(*refused, &peers);
    const std::size_t local = victims.size(); // local ids are below it, even where some were left out above
    for (std::size_t i = 0; i < peers.size(); ++i) {
      list.push_back(peers[i].inputs);
      list.back().id = local + i;
    }
    if (!list.empty()) {
      const std::uint64_t choice = list[policy_->chooseVictim(list)].id;
      if (choice >= local) {
        if (ok(peers_.evictAt(peers[choice - local], bytes, refused))) return Status::Success;
        continue; // its owner freed nothing: choose again without it
      }
      MQX_TRY(evict(victims[choice], run.whileWritingBack));
      peers_.publish(*victims[choice].region);
      return Status::Success;
    }
    if (pending_.empty() || !run.mayWait) return Status::NotFound;
    // Everything evictable is in use: wait for the oldest work to finish.
    MQX_TRY(countFenceWait(FenceWait::ToEvict, [&] { return context_.backend.waitFence(pending_.front().fence); }));
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
  if (region == nullptr || region->bytesStayOnDevice()) return 0;
  const bool pageGranular = context_.options.evictionGranularity == EvictionGranularity::Page;
  Victim victim{region, {}};
  if (pageGranular || !mayBeReached(*region))
    for (std::uint32_t i = 0; i < region->pageCount(); ++i)
      if (evictable(region->pages[i])) victim.pages.push_back(i);
  const std::size_t size = victimBytes(victim);
  std::size_t freed = 0;
  if (!victim.pages.empty() && ok(evict(victim))) freed = size;
  peers_.publish(*region);
  return freed;
}

std::size_t ResidencyManager::giveSpare() {
  // Another process asks for memory: it holds budget, or is about to. The
  // staging memory goes with the spare (once its last copy is done).
  spareBytes_ = 0;
  const std::size_t staging = std::exchange(staging_, {}).bytes();
  return std::exchange(spare_, {}).bytes() + staging;
}

std::size_t ResidencyManager::evictBestNow() {
  poll();
  std::vector<EvictionCandidate> list;
  auto victims = candidates({}, &list);
  if (list.empty()) return 0;
  const Victim& victim = victims[list[policy_->chooseVictim(list)].id];
  const std::size_t size = victimBytes(victim);
  if (!ok(evict(victim))) return 0;
  peers_.publish(*victim.region);
  return size;
}

Status ResidencyManager::evict(const Victim& victim, const std::function<Status()>* whileWritingBack) {
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
  const bool mapsHost = mapper_.mapsHost();
  for (std::uint32_t index : victim.pages) {
    if (mapsHost) MQX_TRY(mapper_.adoptBlock(region, index));
    const PageState& page = region.pages[index];
    const bool needsBlock = mapsHost && !page.dirty() &&
                            (page.host().kind != HostImageKind::Swap || slots_.blockOf(page.host().slot) == nullptr);
    if (!page.dirty() && !needsBlock) continue;
    // A dirty page's slot: a block if one can be had, else pageable memory
    // (the page is then left unmapped: see leaveUnmapped). A clean page
    // without a block stays unmapped likewise.
    SwapSlot slot = slots_.acquire(region.pageMappedBytes(index), false, !page.dirty());
    if (!slot && !page.dirty()) continue;
    if (!slot) {
      log(LogLevel::Warn, "swap buffer full ({} bytes): cannot evict", slots_.limit());
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
  // One dirty page into a host block, with staging memory: its bytes are
  // copied there on the device first, and the page leaves its device memory
  // as soon as that copy is done, while the copy to its block runs from the
  // staging memory (docs/architecture.md, "The staged write-back").
  const bool staged = staging_ && context_.options.stagedWriteBack && mapsHost && writeBacks.size() == 1 &&
                      region.pageDataBytes(writeBacks.front().index) <= staging_.bytes() &&
                      slots_.blockOf(writeBacks.front().slot.get()) != nullptr;
  device::Fence stagedCopyDone; // the copy into the staging memory
  // One fence per page, so that each page is unmapped as soon as its own
  // write-back is done while the later ones still run: unmapping (about
  // 0.04 ms per page on an H100, bench/gpu/vmm_costs.cpp) then hides behind
  // the copies instead of following all of them.
  WriteBacksInFlight inFlight(backend, toHost); // after writeBacks: gone before their slots
  for (WriteBack& writeBack : writeBacks) {
    const std::size_t bytes = region.pageDataBytes(writeBack.index);
    DevicePtr source = region.pageAddress(writeBack.index);
    if (staged) {
      // On the same stream as the copy out of it: the previous staged
      // write-back has read the staging memory before this one writes it.
      MQX_TRY(backend.copyOnDevice(staging_.address(), source, bytes, toHost));
      MQX_TRY(backend.enqueueFence(toHost, &stagedCopyDone));
      source = staging_.address();
    }
    MQX_TRY(backend.copyToHost(writeBack.slot.get(), source, bytes, toHost, slots_.pinned()));
    inFlight.issued(writeBack.slot);
    MQX_TRY(backend.enqueueFence(toHost, &writeBack.done));
    if (staged) staging_.usedUntil(writeBack.done);
  }
  // The caller's copies to the device go now, beside these on the other
  // engine (refillSpare): after the ordering above, so the write-backs do
  // not wait for them.
  if (whileWritingBack != nullptr) {
    if (!writeBacks.empty()) ++stats.evictionsBesideLoads;
    MQX_TRY((*whileWritingBack)());
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
  std::vector<BlockForPage> backings;
  std::size_t batchBytes = 0;
  for (std::uint32_t index : victim.pages) {
    PageState& page = region.pages[index];
    if (page.dirty()) continue;
    stats.bytesDroppedClean += page.deviceValid() ? region.pageDataBytes(index) : 0;
    BlockForPage backing{index, page.host().kind == HostImageKind::Swap ? page.host().slot : nullptr, {}};
    for (WriteBack& block : blocks)
      if (block.index == index) backing.newBlock = std::move(block.slot);
    if (page.host().kind == HostImageKind::Swap && backing.newBlock) { // a pageable image moves to its block
      backing.image = backing.newBlock.get();
      MQX_TRY(mapper_.copyImageTo(region, index, std::move(backing.newBlock)));
    }
    MQX_TRY(releaseDevicePage(region, index));
    backings.push_back(std::move(backing));
  }
  for (WriteBack& writeBack : writeBacks) {
    // Staged, its bytes are safe in the staging memory: the page may leave
    // its device memory now, its block mapped under it before they arrive
    // there (pinned and ordered below).
    MQX_TRY(backend.waitFence(staged ? stagedCopyDone : writeBack.done));
    std::byte* slot = writeBack.slot.get();
    MQX_TRY(mapper_.wroteBack(region.pages[writeBack.index], std::move(writeBack.slot)));
    stats.bytesWrittenBack += region.pageDataBytes(writeBack.index);
    stats.bytesToHost += region.pageDataBytes(writeBack.index);
    MQX_TRY(releaseDevicePage(region, writeBack.index));
    backings.push_back(BlockForPage{writeBack.index, slot, {}});
    batchBytes += region.pageMappedBytes(writeBack.index);
    if (batchBytes >= kMappingBatchBytes && &writeBack != &writeBacks.back()) {
      MQX_TRY(mapper_.mapBlocks(region, backings));
      backings.clear();
      batchBytes = 0;
    }
  }
  writing.reset();
  MQX_TRY(mapper_.mapBlocks(region, backings));
  if (staged) MQX_TRY(afterStagedWriteBack(PageKey{region.id, writeBacks.front().index}));
  ++stats.evictions;
  stats.evictionNanoseconds += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  evictedSinceWriteAhead_ = true;
  span.argument("written_back", writeBacks.size());
  if (span.active()) traceUsage();
  return Status::Success;
}

Status ResidencyManager::afterStagedWriteBack(const PageKey& page) {
  auto& backend = context_.backend;
  const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
  const StreamHandle toDevice = backend.transferStream(device::TransferDirection::ToDevice);
  ++context_.statistics.stagedWriteBacks;
  // The page's host block holds its bytes once the copy from the staging
  // memory is done. Until then it is pinned: remapping it waits (backAll),
  // and so do the host's reads and writes of its image (mayBeReached, which
  // lazy transfers ask) and its release (waitUnreached).
  MQX_TRY(pinUntilComplete(std::span(&page, 1), toHost));
  // Device work enqueued from now on, on any stream, may read the page
  // through its block (a launch whose references are not known reaches every
  // page): it runs after that copy. Loads enqueued so far (this operation's,
  // issued while the write-back runs) are not held back; later ones are, and
  // every stream is ordered after them (orderAfterLoads).
  MQX_TRY(backend.order(toHost, toDevice));
  latestLoadsRunning_ = true;
  loadsFenced_ = ok(backend.enqueueFence(toDevice, &loadsDone_));
  streamsAfterLoads_.clear();
  return Status::Success;
}

Status ResidencyManager::releaseDevicePage(Region& region, std::uint32_t index) {
  MQX_TRY(mapper_.unmapFromDevice(region, index));
  ++context_.statistics.pagesEvicted;
  return Status::Success;
}

} // namespace mqx
