#include "core/device_work.hpp"

#include <algorithm>

#include "core/page_pieces.hpp"
#include "core/page_store.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

// One use per page, with the union of the accesses: an operation may name a
// page twice (a copy's source page spans two destination pieces).
std::vector<PageUse> mergedUses(std::vector<PageUse> uses) {
  auto key = [](const PageUse& use) { return std::pair{use.region->id, use.page}; };
  std::sort(uses.begin(), uses.end(), [&](const PageUse& a, const PageUse& b) { return key(a) < key(b); });
  std::vector<PageUse> result;
  result.reserve(uses.size());
  for (const PageUse& use : uses) {
    if (!result.empty() && key(result.back()) == key(use))
      result.back().access = result.back().access | use.access;
    else
      result.push_back(use);
  }
  return result;
}

} // namespace

void DeviceWork::clear() {
  uses.clear();
  operations.clear();
  written.clear();
  residentRegionsReferenced = false;
  usesUnique = false;
  reachesEveryPage = false;
}

void DeviceWork::addUses(Region* region, DevicePtr address, std::size_t bytes, Access access) {
  if (region == nullptr) return;
  for (const Piece& piece : piecesOf(*region, address, bytes)) {
    Access pageAccess = access;
    if (writes(access) && !reads(access) && !coversPage(*region, piece)) pageAccess = Access::Both; // keep the rest
    uses.push_back({region, piece.page, pageAccess});
    if (writes(access)) written.emplace_back(region, piece.page);
  }
}

Status DeviceWorkRunner::run(DeviceWork& work, StreamHandle stream, bool wait) {
  if (work.empty()) return Status::Success;
  if (!work.usesUnique) work.uses = mergedUses(std::move(work.uses));
  const std::uint64_t pendingBefore = mapper_.pendingPagesMade();
  preparedSinceLastOperation_ = false;
  MQX_TRY(residency_.makeResident(work.uses, stream));
  // Evictions to make room may have left pages pending (clean pages whose
  // image is not yet in their host block): work that may reach every page
  // needs their bytes there too.
  if (work.reachesEveryPage && mapper_.pendingPagesMade() != pendingBefore) {
    Status materialized = Status::Success;
    directory_.forEach([&](Region& region) {
      for (std::uint32_t i = 0; i < region.pageCount() && ok(materialized); ++i)
        materialized = mapper_.materialize(region, i);
    });
    MQX_TRY(materialized);
  }
  for (auto& operation : work.operations)
    MQX_TRY(operation());
  MQX_TRY(recordWritten(work));
  // Multi-process mode: the other processes see these regions' new policy
  // inputs (uses come grouped by region).
  peers_.publish(work.uses);
  std::vector<PageKey>& keys = completionKeys_;
  keys.clear();
  for (const auto& use : work.uses)
    keys.push_back({use.region->id, use.page});
  if (work.residentRegionsReferenced) MQX_TRY(markResidentReferenced(work, keys)); // NoRef (paper §7.3)
  device::Fence fence;
  MQX_TRY(residency_.pinUntilComplete(keys, stream, &fence));
  if (work.reachesEveryPage) {
    mapper_.reachesEveryPage(fence, stream);
    preparedVersion_ = mapper_.version(); // everything prepared, as of this launch
    preparedSinceLastOperation_ = true;
  }
  // The work is enqueued: dirty pages next in line for eviction are written
  // back while it runs (under eviction pressure only).
  residency_.writeBackAhead();
  if (wait) {
    trace::TraceSpan span(trace_, "fence wait", "wait", trace::kCurrentThreadTrack);
    MQX_TRY(backend_.waitFence(fence));
    residency_.poll();
  }
  return Status::Success;
}

Status DeviceWorkRunner::recordWritten(const DeviceWork& work) {
  for (const auto& [region, page] : work.written) {
    PageState& state = region->pages[page];
    // Written on its host block, which now holds its bytes, or on the device.
    MQX_TRY(mapper_.handBack(
        *region, page, state.hostMapped() ? PageStore::writtenOnBacking(state) : PageStore::writtenOnDevice(state)));
  }
  return Status::Success;
}

Status DeviceWorkRunner::markResidentReferenced(const DeviceWork& work, std::vector<PageKey>& keys) {
  std::vector<RegionId> used;
  for (const auto& use : work.uses)
    used.push_back(use.region->id);
  Status marked = Status::Success;
  directory_.forEach([&](Region& region) {
    if (!ok(marked) || std::find(used.begin(), used.end(), region.id) != used.end()) return;
    for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
      PageState& page = region.pages[i];
      if (!page.backed() || !page.deviceValid()) continue;
      // The kernel counts as writing it: the device copy becomes the only one.
      marked = mapper_.handBack(region, i, PageStore::writtenOnDevice(page));
      if (!ok(marked)) return;
      keys.push_back({region.id, i});
    }
  });
  return marked;
}

Status DeviceWorkRunner::prepareEveryPage(const std::vector<RegionReference>& references, DeviceWork& work) {
  if (preparedSinceLastOperation_ && preparedVersion_ == mapper_.version()) return Status::Success;
  Status prepared = Status::Success;
  directory_.forEach([&](Region& region) {
    if (!ok(prepared)) return;
    for (const RegionReference& reference : references)
      if (reference.region == &region) return; // the launch's own uses
    for (std::uint32_t i = 0; i < region.pageCount() && ok(prepared); ++i) {
      const PageState& page = region.pages[i];
      if (page.hostMapped()) {
        prepared = mapper_.materialize(region, i);
      } else if (page.backed() && (!page.deviceValid() || page.host().kind != HostImageKind::None)) {
        work.uses.push_back({&region, i, Access::Both});
        work.written.emplace_back(&region, i);
      }
    }
  });
  return prepared;
}

} // namespace mqx
