// ResidencyManager's write-back ahead of eviction (issue 14, "overlap
// write-back with compute on the copy engines"). Without it, an eviction
// writes its dirty victim back and waits for the copy before it can reuse
// the device memory: the launch that needs the room waits for a full
// device-to-host transfer, while the device-to-host copy engine idles the
// rest of the time. Under eviction pressure the pages next in line are
// written back while kernels run; their eviction is then an unmap and a
// remap, and CDR (paper §4.2), which prefers clean victims, picks them.
//
// Which pages are next is guessed in least-recently-used order, not asked
// of the replacement policy: a guess must not change the policy's state
// (the adaptive and random policies keep some), and a wrong guess costs
// only copy-engine time and a swap slot. The policy still chooses.
//
// The copy runs while the application may go on using the page. It counts
// only if nothing changed the page while it ran: the page is pinned until
// the copy's fence (so that nothing remaps it), every transition of the
// page store bumps the page's generation, and a launch that may reach every
// page (its references unknown) does not mark dirty pages again, so any such
// launch enqueued meanwhile voids every write ahead in flight.
#include <algorithm>
#include <numeric>

#include "common/log.hpp"
#include "core/residency_manager.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {

void ResidencyManager::writeBackAhead() {
  // A copy ahead is void at the next launch that may reach every page.
  // PyTorch under the default configuration mixes such launches with
  // launches whose pointers mqx knows, a few operations apart, and wrote
  // 49 GB ahead on the H100 peer benchmark, all of it stale (bench/results/
  // peers-matrix-H100-2c1c40e.json), doubling its device-to-host traffic:
  // nothing is written ahead until writeBackAheadQuietOperations operations
  // followed the last such launch. A program whose unknown launches are rare
  // (a graph now and then) resumes after them.
  const std::uint32_t quiet = context_.options.writeBackAheadQuietOperations;
  const std::uint64_t everyPageLaunches = mapper_.everyPageLaunches();
  if (everyPageLaunches != everyPageLaunchesSeen_) {
    everyPageLaunchesSeen_ = everyPageLaunches;
    operationsSinceEveryPageLaunch_ = 0;
  } else if (operationsSinceEveryPageLaunch_ < quiet) {
    ++operationsSinceEveryPageLaunch_;
  }
  if (!evictedSinceWriteAhead_ || context_.options.writeBackAheadFraction <= 0) return;
  if (operationsSinceEveryPageLaunch_ < quiet) return;
  evictedSinceWriteAhead_ = false;
  std::vector<EvictionCandidate> list;
  const std::vector<Victim> victims = candidates({}, &list); // none while work may reach every page
  if (victims.empty()) return;
  // The fraction of the budget, one page at least.
  const std::size_t target = std::max(
      static_cast<std::size_t>(context_.options.writeBackAheadFraction * static_cast<double>(context_.budget.limit())),
      victims.front().region->pageMappedBytes(0));
  std::vector<std::size_t> order(list.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::stable_sort(order, {}, [&](std::size_t i) { return list[i].lastUse; });

  auto& backend = context_.backend;
  const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
  std::size_t ready = writeAheadBytes_; // clean next victims and writes in flight
  std::vector<PageKey> issued;
  std::vector<WriteAhead> entries;
  bool ordered = false;
  for (std::size_t rank = 0; rank < order.size() && ready < target; ++rank) {
    const Victim& victim = victims[list[order[rank]].id];
    Region& region = *victim.region;
    for (std::uint32_t index : victim.pages) {
      const PageState& page = region.pages[index];
      const std::size_t slotBytes = region.pageMappedBytes(index);
      if (!page.dirty()) { // its eviction moves nothing already
        ready += slotBytes;
        continue;
      }
      // No waiting for a slot here (SwapSlots::acquire may wait for loads), and
      // room left for twice the target: a page written ahead keeps its slot
      // while resident, and a nearly full swap buffer is the evictions' own
      // (a dirty victim that finds no slot cannot be evicted). Past that the
      // evictions write back as before.
      if (slots_.usedBytes() + slotBytes + 2 * target > slots_.limit()) break;
      SwapSlot slot = slots_.acquireFree(slotBytes, mapper_.mapsHost());
      if (!slot) break;
      if (!ordered) { // loads into these pages ran on the other copy stream
        if (!ok(backend.order(backend.transferStream(device::TransferDirection::ToDevice), toHost))) break;
        ordered = true;
      }
      const std::size_t dataBytes = region.pageDataBytes(index);
      if (!ok(backend.copyToHost(slot.get(), region.pageAddress(index), dataBytes, toHost, slots_.pinned()))) break;
      issued.push_back({region.id, index});
      entries.push_back(
          {{region.id, index}, std::move(slot), slotBytes, dataBytes, page.generation(), everyPageLaunches, {}});
      ready += slotBytes;
    }
  }
  if (entries.empty()) return;
  trace::TraceSpan span(context_.trace, "write back ahead", "eviction", trace::kCurrentThreadTrack);
  device::Fence done;
  if (!ok(pinUntilComplete(issued, toHost, &done))) {
    // No fence: wait for the copies here and drop them (the pins that were
    // taken go with the failed fence's pending work, if any).
    if (Status waited = backend.synchronize(toHost); !ok(waited)) {
      // The copies may still write the slots: they are kept (lost), never reused.
      log(LogLevel::Error, "waiting for writes ahead without a fence: {}; their slots are not reused",
          toString(waited));
      for (WriteAhead& entry : entries)
        entry.slot.abandon();
    }
    return; // the slots go back with `entries`
  }
  for (WriteAhead& entry : entries) {
    entry.done = done;
    writeAheadBytes_ += entry.slotBytes;
    context_.statistics.bytesWrittenAhead += entry.dataBytes;
    context_.statistics.bytesToHost += entry.dataBytes;
    writesAhead_.push_back(std::move(entry));
  }
  span.argument("pages", entries.size()).argument("in_flight_bytes", writeAheadBytes_);
}

void ResidencyManager::finishWritesAhead() {
  std::vector<Region*> cleaned; // published once each below
  std::size_t running = 0;      // entries whose copy still runs, kept in front
  for (WriteAhead& entry : writesAhead_) {
    if (!context_.backend.fenceReached(entry.done)) {
      if (&entry != &writesAhead_[running]) writesAhead_[running] = std::move(entry);
      ++running;
      continue;
    }
    writeAheadBytes_ -= entry.slotBytes;
    Region* region = context_.directory.byId(entry.page.region);
    PageState* page =
        region != nullptr && entry.page.page < region->pageCount() ? &region->pages[entry.page.page] : nullptr;
    const bool unchanged = page != nullptr && page->generation() == entry.generation &&
                           entry.everyPageLaunches == mapper_.everyPageLaunches() && page->dirty() && page->backed();
    if (unchanged && ok(mapper_.wroteBack(*page, std::move(entry.slot)))) {
      if (std::ranges::find(cleaned, region) == cleaned.end()) cleaned.push_back(region);
      continue;
    }
    context_.statistics.bytesWrittenAheadStale += entry.dataBytes; // its slot goes back with the entry
  }
  writesAhead_.erase(writesAhead_.begin() + static_cast<std::ptrdiff_t>(running), writesAhead_.end());
  // Their dirty bytes changed: CDR's e (paper §4.2), once per region.
  for (Region* region : cleaned)
    peers_.publish(*region);
}

} // namespace mqx
