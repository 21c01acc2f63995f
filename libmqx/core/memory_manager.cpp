#include "core/memory_manager.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "common/log.hpp"
#include "core/cow_tracker.hpp"
#include "core/device_budget.hpp"
#include "core/host_image.hpp"
#include "core/reference_finder.hpp"
#include "core/region_directory.hpp"
#include "core/residency_manager.hpp"
#include "core/swap_buffer.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

// Set while a thread holds the manager's lock: a write fault taken then is
// a bug in mqx, and must not deadlock on the lock.
thread_local bool insideManager = false;

constexpr std::uintptr_t kHostPage = 4096;

struct LockScope {
  explicit LockScope(std::mutex& mutex) : lock(mutex) { insideManager = true; }
  ~LockScope() { insideManager = false; }
  std::unique_lock<std::mutex> lock;
};

// One page's share of an operation on a byte range.
struct Piece {
  std::uint32_t page;
  std::size_t offset; // in the page
  std::size_t bytes;
  std::size_t position; // in the operation
};

std::vector<Piece> piecesOf(const Region& region, DevicePtr address, std::size_t bytes) {
  std::vector<Piece> pieces;
  std::size_t position = 0;
  while (position < bytes) {
    const std::size_t regionOffset = address + position - region.base;
    const auto page = static_cast<std::uint32_t>(regionOffset / region.pageSize);
    const std::size_t offset = regionOffset % region.pageSize;
    const std::size_t length = std::min(bytes - position, region.pageSize - offset);
    pieces.push_back({page, offset, length, position});
    position += length;
  }
  return pieces;
}

bool coversPage(const Region& region, const Piece& piece) {
  return piece.offset == 0 && piece.bytes == region.pageDataBytes(piece.page);
}

// Stack memory must never be write-protected: the signal frame of the fault
// would land on it. Only the calling thread's stack can be checked cheaply.
bool onCurrentStack(const void* address) {
  thread_local std::uintptr_t low = 0, high = 0;
  if (high == 0) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      void* stack = nullptr;
      std::size_t size = 0;
      pthread_attr_getstack(&attributes, &stack, &size);
      low = reinterpret_cast<std::uintptr_t>(stack);
      high = low + size;
      pthread_attr_destroy(&attributes);
    }
  }
  auto value = reinterpret_cast<std::uintptr_t>(address);
  return value >= low && value < high;
}

} // namespace

// The process's trace (trace.file), or null when tracing is off. A trace
// that cannot be created leaves tracing off, never the process without mqx.
std::unique_ptr<trace::TraceRecorder> openTrace(const Config& config, const device::DeviceBackend& backend) {
  try {
    return trace::TraceRecorder::open(config.traceFile, fmt::format("mqx client ({} device)", backend.name()),
                                      config.traceBufferEvents);
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "{}; tracing stays off", error.what());
    return nullptr;
  }
}

// Device work of one API call: pages it needs resident, the operations to
// enqueue once they are, and the pages those operations write.
struct DeviceWork {
  std::vector<PageUse> uses;
  std::vector<std::function<Status()>> operations;
  std::vector<std::pair<Region*, std::uint32_t>> written;
  // The paper's NoRef variant: every region resident at launch counts as
  // read and written by the kernel (pinned, and dirty afterwards).
  bool residentRegionsReferenced = false;
  bool usesUnique = false; // no page named twice: no merge needed
  // A launch whose references are not known (docs/architecture.md): it may
  // reach every page of the process, so none is remapped until it completes.
  bool reachesEveryPage = false;
  bool empty() const { return operations.empty(); }
  // Empties it for reuse, keeping the vectors' capacity (the launch path).
  void clear() {
    uses.clear();
    operations.clear();
    written.clear();
    residentRegionsReferenced = false;
    usesUnique = false;
    reachesEveryPage = false;
  }
};

// How much of a copy's piece may be left in the application's buffer: all of
// it but `head` bytes at its start and `tail` bytes at its end, which lie on
// host pages shared with other data (SourceEdges).
struct CowExtent {
  bool allowed = false;
  std::size_t head = 0;
  std::size_t tail = 0;
};

class ManagerState {
public:
  ManagerState(const Config& configuration, device::DeviceBackend& device, std::shared_ptr<DeviceBudget> sharedBudget)
      : config(configuration), backend(device),
        budget(sharedBudget ? std::move(sharedBudget)
                            : std::make_shared<LocalDeviceBudget>(configuration.deviceMemoryLimit != 0
                                                                      ? configuration.deviceMemoryLimit
                                                                      : device.totalMemory())),
        swap(device, configuration.swapBufferLimit, configuration.pinnedSwap), trace(openTrace(configuration, device)),
        residency(ResidencyContext{config, backend, *budget, swap, cow, directory, stats, trace.get()},
                  makeReplacementPolicy(configuration)),
        references(config, backend, directory) {
    pageSize = roundUp(std::max(config.pageSize, backend.granularity()), backend.granularity());
  }

  Config config;
  device::DeviceBackend& backend;
  std::shared_ptr<DeviceBudget> budget;
  SwapBuffer swap;
  CowTracker cow;
  RegionDirectory directory;
  Statistics stats;
  std::unique_ptr<trace::TraceRecorder> trace; // before residency, which records into it
  ResidencyManager residency;
  ReferenceFinder references;
  std::size_t pageSize = 0;
  RegionId nextRegion = 1;
  mutable std::mutex mutex;
  // Scratch of the launch path, reused under `mutex` so that a launch
  // allocates nothing once they have grown (no operation re-enters run()).
  std::vector<RegionReference> launchReferences;
  DeviceWork launchWork;
  std::vector<PageKey> completionKeys;

  // Validates that [address, address + bytes) lies inside one managed region.
  Region* rangeRegion(DevicePtr address, std::size_t bytes) {
    Region* region = directory.find(address);
    if (region == nullptr || bytes > region->base + region->size - address) return nullptr;
    return region;
  }

  Status run(DeviceWork& work, StreamHandle stream, bool wait);
  // A launch that may reach every page: resident pages that are not valid
  // on the device are loaded, those with a host image become its only copy
  // (the launch may write them), and pending pages on host blocks get their
  // bytes. Skipped when nothing changed since the last such launch.
  void prepareEveryPage(const std::vector<RegionReference>& references, DeviceWork& work);
  std::uint64_t preparedVersion = ~std::uint64_t{0};
  // Whether lazy (host-side) changes to the page could race with in-flight
  // device work that reaches it.
  bool inFlight(const PageState& page) {
    return page.pinned() || (page.hostMapped() && residency.everyPageReachable());
  }
  // Gives the page a swap image in `slot`; a page on a host block keeps its
  // block (which it maps) and takes the bytes there instead.
  void installSwapImage(Region& region, std::uint32_t page, std::byte* slot);
  void markResidentReferenced(const DeviceWork& work, std::vector<PageKey>& keys);
  void discardHostImage(Region& region, std::uint32_t page);
  void replaceHostImage(Region& region, std::uint32_t page, HostImage image);
  std::byte* materializeSwap(Region& region, std::uint32_t page);
  void writeHostPiece(Region& region, const Piece& piece, const std::byte* source, const CowExtent& extent,
                      DeviceWork& work, StreamHandle stream);
  std::optional<HostImage> cowImage(Region& region, const Piece& piece, const std::byte* source,
                                    const CowExtent& extent);
  void memsetPiece(Region& region, const Piece& piece, std::uint32_t pattern, unsigned elementSize, DeviceWork& work,
                   StreamHandle stream);
  bool cloneImage(Region& destination, const Piece& piece, Region& source, DevicePtr sourceAddress);
  void addDeviceUses(Region* region, DevicePtr address, std::size_t bytes, Access access, DeviceWork& work);
  void breakCow(const CowRecord& record);
  void prepareHostWrite(std::uintptr_t address, std::size_t bytes);
};

// Pointer tables (docs/architecture.md): a copy of at most this many bytes
// into managed memory is scanned for addresses of managed regions, one range
// check per 8-byte word. Tables of device pointers (batched BLAS, gathers)
// are small; bulk data is not scanned.
constexpr std::size_t kPointerTableScanBytes = std::size_t{1} << 20;

// Adds to `table` the regions whose addresses `bytes` holds.
void notePointers(RegionDirectory& directory, Region& table, const std::byte* bytes, std::size_t count) {
  if (count > kPointerTableScanBytes) return;
  for (std::size_t offset = 0; offset + sizeof(DevicePtr) <= count; offset += sizeof(DevicePtr)) {
    DevicePtr value;
    std::memcpy(&value, bytes + offset, sizeof value);
    if (!directory.mayContain(value)) continue;
    const Region* target = directory.find(value);
    if (target != nullptr && target != &table &&
        std::find(table.pointsTo.begin(), table.pointsTo.end(), target->id) == table.pointsTo.end())
      table.pointsTo.push_back(target->id);
  }
}

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

Status ManagerState::run(DeviceWork& work, StreamHandle stream, bool wait) {
  if (work.empty()) return Status::Success;
  if (!work.usesUnique) work.uses = mergedUses(std::move(work.uses));
  const std::uint64_t pendingBefore = residency.pendingPagesMade();
  MQX_TRY(residency.makeResident(work.uses, stream));
  // Evictions to make room may have left pages pending (clean pages whose
  // image is not yet in their host block): work that may reach every page
  // needs their bytes there too.
  if (work.reachesEveryPage && residency.pendingPagesMade() != pendingBefore)
    directory.forEach([&](Region& region) {
      for (std::uint32_t i = 0; i < region.pageCount(); ++i)
        residency.materialize(region, i);
    });
  for (auto& operation : work.operations)
    MQX_TRY(operation());
  for (auto& [region, page] : work.written) {
    PageState& state = region->pages[page];
    if (state.hostMapped()) { // written on its host block, which now holds its bytes
      std::byte* backing = state.backing;
      if (!(state.host.kind == HostImageKind::Swap && state.host.slot == backing)) {
        residency.releaseHostImage(*region, page);
        state.host = HostImage::inSwap(backing);
      }
      continue;
    }
    if (state.host.kind != HostImageKind::None) residency.releaseHostImage(*region, page);
    state.deviceValid = true;
  }
  // Multi-process mode: the other processes see these regions' new policy
  // inputs (uses come grouped by region).
  residency.publish(work.uses);
  std::vector<PageKey>& keys = completionKeys;
  keys.clear();
  for (const auto& use : work.uses)
    keys.push_back({use.region->id, use.page});
  if (work.residentRegionsReferenced) markResidentReferenced(work, keys); // NoRef (paper §7.3)
  device::Fence fence;
  MQX_TRY(residency.pinUntilComplete(keys, stream, &fence));
  if (work.reachesEveryPage) {
    residency.reachesEveryPage(fence);
    preparedVersion = residency.stateVersion(); // everything prepared, as of this launch
  }
  if (wait) {
    trace::TraceSpan span(trace.get(), "fence wait", "wait", trace::kCurrentThreadTrack);
    MQX_TRY(backend.waitFence(fence));
    residency.poll();
  }
  return Status::Success;
}

void ManagerState::markResidentReferenced(const DeviceWork& work, std::vector<PageKey>& keys) {
  std::vector<RegionId> used;
  for (const auto& use : work.uses)
    used.push_back(use.region->id);
  directory.forEach([&](Region& region) {
    if (std::find(used.begin(), used.end(), region.id) != used.end()) return;
    for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
      PageState& page = region.pages[i];
      if (!page.backed || !page.deviceValid) continue;
      if (page.host.kind != HostImageKind::None) residency.releaseHostImage(region, i);
      keys.push_back({region.id, i});
    }
  });
}

void ManagerState::prepareEveryPage(const std::vector<RegionReference>& references, DeviceWork& work) {
  if (preparedVersion == residency.stateVersion()) return;
  directory.forEach([&](Region& region) {
    for (const RegionReference& reference : references)
      if (reference.region == &region) return; // the launch's own uses
    for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
      PageState& page = region.pages[i];
      if (page.hostMapped()) {
        residency.materialize(region, i);
      } else if (page.backed && (!page.deviceValid || page.host.kind != HostImageKind::None)) {
        work.uses.push_back({&region, i, Access::Both});
        work.written.emplace_back(&region, i);
      }
    }
  });
}

void ManagerState::installSwapImage(Region& region, std::uint32_t index, std::byte* slot) {
  PageState& page = region.pages[index];
  if (page.hostMapped() && slot != page.backing) {
    std::memcpy(page.backing, slot, region.pageDataBytes(index));
    swap.release(slot, region.pageMappedBytes(index));
    slot = page.backing;
  }
  page.host = HostImage::inSwap(slot);
}

void ManagerState::discardHostImage(Region& region, std::uint32_t index) {
  const PageState& page = region.pages[index];
  const bool lazyData = page.host.kind == HostImageKind::CowSource || page.host.kind == HostImageKind::Swap;
  if (lazyData && !page.deviceValid) stats.bytesAvoidedLazy += region.pageDataBytes(index);
  if (page.host.kind != HostImageKind::None) residency.releaseHostImage(region, index);
}

// Installs `image` as the page's only copy. The new image is acquired by
// the caller before the old one goes, so that a failure loses nothing.
void ManagerState::replaceHostImage(Region& region, std::uint32_t index, HostImage image) {
  discardHostImage(region, index);
  if (image.kind == HostImageKind::Swap)
    installSwapImage(region, index, image.slot);
  else
    region.pages[index].host = image;
  region.pages[index].deviceValid = false;
  residency.noteStateChange();
}

// Gives the page a swap-slot image holding its current content; null when
// the swap buffer is full.
std::byte* ManagerState::materializeSwap(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  residency.noteStateChange();
  if (page.hostMapped()) { // its host block holds its bytes
    residency.materialize(region, index);
    return page.backing;
  }
  if (page.host.kind == HostImageKind::Swap) return page.host.slot;
  std::byte* slot = residency.acquireSlot(region.pageMappedBytes(index));
  if (slot == nullptr) return nullptr;
  if (page.host.kind == HostImageKind::None) {
    if (!ok(residency.readDeviceToSlot(region, index, slot))) {
      swap.release(slot, region.pageMappedBytes(index));
      return nullptr;
    }
  } else {
    readHostImage(page.host, 0, region.pageDataBytes(index), slot);
    residency.releaseHostImage(region, index);
  }
  page.host = HostImage::inSwap(slot);
  return slot;
}

void ManagerState::addDeviceUses(Region* region, DevicePtr address, std::size_t bytes, Access access,
                                 DeviceWork& work) {
  if (region == nullptr) return;
  for (const Piece& piece : piecesOf(*region, address, bytes)) {
    Access pageAccess = access;
    if (writes(access) && !reads(access) && !coversPage(*region, piece)) pageAccess = Access::Both; // keep the rest
    work.uses.push_back({region, piece.page, pageAccess});
    if (writes(access)) work.written.emplace_back(region, piece.page);
  }
}

// The piece's source as a copy-on-write image: its edges saved, the rest
// write-protected (and recorded as read by the page). Nullopt when the
// source cannot be protected.
std::optional<HostImage> ManagerState::cowImage(Region& region, const Piece& piece, const std::byte* source,
                                                const CowExtent& extent) {
  HostImage image = HostImage::inBuffer(source);
  if (extent.head + extent.tail != 0) {
    auto edges = std::make_shared<SourceEdges>();
    edges->headBytes = extent.head;
    edges->tailBytes = extent.tail;
    edges->tailStart = piece.bytes - extent.tail;
    edges->bytes = std::make_unique_for_overwrite<std::byte[]>(extent.head + extent.tail);
    std::memcpy(edges->bytes.get(), source, extent.head);
    std::memcpy(edges->bytes.get() + extent.head, source + edges->tailStart, extent.tail);
    image.edges = std::move(edges);
  }
  if (!cow.protect(image.protectedStart(), image.protectedBytes(piece.bytes), PageKey{region.id, piece.page}))
    return std::nullopt;
  stats.bytesCopiedOnHost += extent.head + extent.tail;
  return image;
}

void ManagerState::writeHostPiece(Region& region, const Piece& piece, const std::byte* source, const CowExtent& extent,
                                  DeviceWork& work, StreamHandle stream) {
  PageState& page = region.pages[piece.page];
  const bool lazy = config.lazyTransfer && !inFlight(page);
  if (lazy && coversPage(region, piece)) {
    if (auto image = extent.allowed ? cowImage(region, piece, source, extent) : std::nullopt) {
      // protect() already recorded this page's reference: keep it, drop the old
      // image.
      discardHostImage(region, piece.page);
      page.host = std::move(*image);
      page.deviceValid = false;
      residency.noteStateChange();
      return;
    }
    if (std::byte* slot = residency.acquireSlot(region.pageMappedBytes(piece.page))) {
      std::memcpy(slot, source, piece.bytes);
      stats.bytesCopiedOnHost += piece.bytes;
      replaceHostImage(region, piece.page, HostImage::inSwap(slot));
      return;
    }
  } else if (lazy && !page.dirty()) {
    if (std::byte* slot = materializeSwap(region, piece.page)) {
      std::memcpy(slot + piece.offset, source, piece.bytes);
      stats.bytesCopiedOnHost += piece.bytes;
      page.deviceValid = false;
      return;
    }
  }
  // Eager: the page is in use on the device, holds the only copy, laziness
  // is off, or the swap buffer is full.
  const DevicePtr address = region.pageAddress(piece.page) + piece.offset;
  addDeviceUses(&region, address, piece.bytes, Access::Output, work);
  work.operations.push_back([this, address, source, bytes = piece.bytes, stream] {
    stats.bytesToDevice += bytes;
    return backend.copyToDevice(address, source, bytes, stream, false);
  });
}

void ManagerState::memsetPiece(Region& region, const Piece& piece, std::uint32_t pattern, unsigned elementSize,
                               DeviceWork& work, StreamHandle stream) {
  PageState& page = region.pages[piece.page];
  const bool lazy = config.lazyTransfer && !inFlight(page);
  if (lazy && coversPage(region, piece) && piece.bytes % elementSize == 0) {
    HostImage image = HostImage::filled(elementSize, pattern);
    if (elementSize == 1 && pattern == 0) image = HostImage::of(HostImageKind::Zero);
    replaceHostImage(region, piece.page, image);
    return;
  }
  if (lazy && !page.dirty()) {
    if (std::byte* slot = materializeSwap(region, piece.page)) {
      const HostImage fill = HostImage::filled(elementSize, pattern);
      // Fill phase: the memset starts element-aligned, and so does the piece.
      readHostImage(fill, 0, piece.bytes, slot + piece.offset);
      page.deviceValid = false;
      return;
    }
  }
  const DevicePtr address = region.pageAddress(piece.page) + piece.offset;
  addDeviceUses(&region, address, piece.bytes, Access::Output, work);
  work.operations.push_back([this, address, pattern, elementSize, bytes = piece.bytes, stream] {
    stats.bytesFilledOnDevice += bytes;
    return backend.fill(address, pattern, elementSize, bytes / elementSize, stream);
  });
}

// Lazy device-to-device copy of a whole page whose source is a whole page
// held on the host: the destination shares or copies the host image.
bool ManagerState::cloneImage(Region& destination, const Piece& piece, Region& source, DevicePtr sourceAddress) {
  if (!config.lazyTransfer || !coversPage(destination, piece)) return false;
  const std::size_t sourceOffset = sourceAddress - source.base;
  if (sourceOffset % source.pageSize != 0) return false;
  const auto sourceIndex = static_cast<std::uint32_t>(sourceOffset / source.pageSize);
  const PageState& from = source.pages[sourceIndex];
  PageState& to = destination.pages[piece.page];
  if (source.pageDataBytes(sourceIndex) != piece.bytes || from.host.kind == HostImageKind::None || inFlight(to) ||
      (&source == &destination && sourceIndex == piece.page))
    return false;
  HostImage image = from.host;
  if (image.kind == HostImageKind::CowSource) {
    // The destination shares the source's saved edges too.
    if (!cow.protect(image.protectedStart(), image.protectedBytes(piece.bytes), PageKey{destination.id, piece.page}))
      return false;
    discardHostImage(destination, piece.page);
    to.host = image;
    to.deviceValid = false;
    residency.noteStateChange();
    return true;
  }
  if (image.kind == HostImageKind::Swap) {
    std::byte* slot = residency.acquireSlot(destination.pageMappedBytes(piece.page));
    if (slot == nullptr) return false;
    std::memcpy(slot, image.slot, piece.bytes);
    image.slot = slot;
  }
  replaceHostImage(destination, piece.page, image);
  return true;
}

void ManagerState::breakCow(const CowRecord& record) {
  Region* region = directory.byId(record.owner.region);
  if (region == nullptr) return;
  PageState& page = region->pages[record.owner.page];
  residency.waitForSourceReads(); // a load may still be reading the source
  if (page.deviceValid) {
    residency.releaseHostImage(*region, record.owner.page); // the device copy is now the only one
    return;
  }
  // Over the limit if need be: failing here would lose the application's data.
  const std::size_t bytes = region->pageDataBytes(record.owner.page);
  stats.cowBytesSaved += bytes;
  if (page.hostMapped()) { // its host block takes the bytes
    residency.materialize(*region, record.owner.page);
    return;
  }
  std::byte* slot = residency.acquireSlot(region->pageMappedBytes(record.owner.page), true);
  readHostImage(page.host, 0, bytes, slot); // the saved edges included
  residency.releaseHostImage(*region, record.owner.page);
  page.host = HostImage::inSwap(slot);
}

void ManagerState::prepareHostWrite(std::uintptr_t address, std::size_t bytes) {
  if (!cow.anyProtected() || bytes == 0) return;
  for (const CowRecord& record : cow.overlapping(address, bytes))
    breakCow(record);
  // Lingering protection too: whoever writes next is not the application.
  cow.releaseLingering(address, bytes);
}

MemoryManager::MemoryManager(const Config& config, device::DeviceBackend& backend, std::shared_ptr<DeviceBudget> budget)
    : state_(std::make_unique<ManagerState>(config, backend, std::move(budget))) {}

MemoryManager::~MemoryManager() {
  LockScope scope(state_->mutex);
  state_->residency.waitAll();
  std::vector<RegionId> ids;
  state_->directory.forEach([&](Region& region) { ids.push_back(region.id); });
  for (RegionId id : ids) {
    Region* region = state_->directory.byId(id);
    for (std::uint32_t i = 0; i < region->pageCount(); ++i)
      if (region->pages[i].host.kind != HostImageKind::None) state_->residency.releaseHostImage(*region, i);
    state_->residency.unbackRegion(*region);
    state_->backend.release(region->base, region->reservedSize);
    state_->directory.remove(id);
  }
}

Status MemoryManager::allocate(std::size_t bytes, DevicePtr* address) {
  if (address == nullptr || bytes == 0) return Status::InvalidValue;
  LockScope scope(state_->mutex);
  auto& s = *state_;
  const std::size_t granularity = s.backend.granularity();
  if (bytes > (std::size_t{1} << 48)) return Status::OutOfMemory;
  const std::size_t reserved = roundUp(bytes, granularity);
  // Every byte must fit somewhere, and a region must fit the device to be
  // usable by a kernel at all.
  // Where pages map host blocks, a kernel can use a region larger than the
  // budget (what gets no device memory runs from host memory).
  const bool largerThanBudget = reserved > s.budget->limit() && !s.residency.mapsHost();
  if (largerThanBudget || s.directory.totalBytes() + bytes > s.budget->limit() + s.swap.limit()) {
    log(LogLevel::Info,
        "allocation of {} bytes refused: device budget {} + swap {} , {} "
        "allocated",
        bytes, s.budget->limit(), s.swap.limit(), s.directory.totalBytes());
    return Status::OutOfMemory;
  }
  DevicePtr base = 0;
  MQX_TRY(s.backend.reserve(reserved, &base));
  auto region = std::make_unique<Region>();
  region->id = s.nextRegion++;
  region->base = base;
  region->size = bytes;
  region->reservedSize = reserved;
  region->pageSize = s.config.pageCoherence ? std::min(s.pageSize, reserved) : reserved; // NoPage: one page
  region->pages.resize((reserved + region->pageSize - 1) / region->pageSize);
  Region& added = *region;
  s.directory.add(std::move(region));
  if (s.residency.mapsHost()) {
    // Every page mapped from the start: device memory while the budget has
    // room (as cuMemAlloc would), else a host block. Its zeros are written
    // before any launch can read it.
    for (std::uint32_t i = 0; i < added.pageCount(); ++i) {
      const std::size_t pageBytes = added.pageMappedBytes(i);
      Status status = Status::OutOfMemory;
      if (s.budget->tryAcquire(pageBytes)) {
        status = s.backend.map(added.pageAddress(i), pageBytes);
        if (ok(status))
          added.pages[i].backed = true;
        else
          s.budget->release(pageBytes);
      }
      if (!ok(status)) status = s.residency.mapToHost(added, i);
      if (!ok(status)) s.residency.leaveUnmapped(status); // backed at its first use, as without host blocks
    }
    s.residency.noteStateChange();
    s.residency.publish(added);
  }
  *address = base;
  return Status::Success;
}

Status MemoryManager::free(DevicePtr address) {
  LockScope scope(state_->mutex);
  auto& s = *state_;
  Region* region = s.directory.byBase(address);
  if (region == nullptr) return Status::InvalidValue;
  // The driver's free waits for work using the memory; so do we.
  MQX_TRY(s.residency.waitUnpinned(*region));
  for (std::uint32_t i = 0; i < region->pageCount(); ++i)
    s.discardHostImage(*region, i);
  s.residency.unbackRegion(*region);
  MQX_TRY(s.backend.release(region->base, region->reservedSize));
  s.references.forget(region->id);
  const RegionId gone = region->id;
  s.directory.remove(gone);
  s.directory.forEach([&](Region& table) { std::erase(table.pointsTo, gone); });
  return Status::Success;
}

bool MemoryManager::isManaged(DevicePtr address) const {
  LockScope scope(state_->mutex);
  return state_->directory.find(address) != nullptr;
}

Status MemoryManager::regionOf(DevicePtr address, RegionInfo* info) const {
  LockScope scope(state_->mutex);
  const Region* region = state_->directory.find(address);
  if (region == nullptr || info == nullptr) return Status::InvalidValue;
  *info = RegionInfo{region->base, region->size};
  return Status::Success;
}

Status MemoryManager::copyHostToDevice(DevicePtr destination, const void* source, std::size_t bytes,
                                       StreamHandle stream, bool synchronous) {
  if (bytes == 0) return Status::Success;
  if (source == nullptr) return Status::InvalidValue;
  LockScope scope(state_->mutex);
  auto& s = *state_;
  Region* region = s.rangeRegion(destination, bytes);
  if (region == nullptr) return Status::InvalidValue;
  trace::TraceSpan span(s.trace.get(), "copy H2D (application)", "transfer", trace::kCurrentThreadTrack);
  span.argument("bytes", bytes).argument("region", region->id);
  s.residency.poll();
  s.stats.bytesRequestedToDevice += bytes;
  const auto* bytesIn = static_cast<const std::byte*>(source);
  notePointers(s.directory, *region, bytesIn, bytes);
  // Only host pages that lie wholly inside the source are write-protected:
  // the partial pages at either end hold other data (malloc's chunk headers,
  // neighbouring allocations) that any thread may write, mqx's own included.
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  const std::uintptr_t safeStart = roundUp(start, kHostPage);
  const std::uintptr_t safeEnd = (start + bytes) / kHostPage * kHostPage;
  const bool cowAllowed =
      s.config.copyOnWrite && bytes >= s.config.cowMinBytes && safeEnd > safeStart && !onCurrentStack(source);
  // Protect the safe range once, so that per-page protection finds the host
  // pages already described (one /proc/self/maps read per copy).
  const PageKey wholeCopy{0, 0};
  const bool sourceProtected =
      cowAllowed && s.cow.protect(reinterpret_cast<const void*>(safeStart), safeEnd - safeStart, wholeCopy);
  DeviceWork work;
  for (const Piece& piece : piecesOf(*region, destination, bytes)) {
    // The first and last pieces reach into the partial host pages: those
    // bytes are saved, the rest stays in the buffer.
    const std::uintptr_t pieceStart = start + piece.position;
    const std::uintptr_t pieceEnd = pieceStart + piece.bytes;
    CowExtent extent;
    if (sourceProtected) {
      extent.head = pieceStart < safeStart ? std::min(safeStart, pieceEnd) - pieceStart : 0;
      extent.tail = pieceEnd > safeEnd ? pieceEnd - std::max(safeEnd, pieceStart) : 0;
      extent.allowed = extent.head + extent.tail < piece.bytes;
    }
    s.writeHostPiece(*region, piece, bytesIn + piece.position, extent, work, stream);
  }
  if (sourceProtected) s.cow.unprotect(reinterpret_cast<const void*>(safeStart), safeEnd - safeStart, wholeCopy);
  // Eager pieces read the application's buffer, which may be reused as soon
  // as we return: wait for them.
  return s.run(work, stream, true);
}

Status MemoryManager::copyDeviceToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                                       bool synchronous) {
  if (bytes == 0) return Status::Success;
  if (destination == nullptr) return Status::InvalidValue;
  LockScope scope(state_->mutex);
  auto& s = *state_;
  Region* region = s.rangeRegion(source, bytes);
  if (region == nullptr) return Status::InvalidValue;
  trace::TraceSpan span(s.trace.get(), "copy D2H (application)", "transfer", trace::kCurrentThreadTrack);
  span.argument("bytes", bytes).argument("region", region->id);
  s.residency.poll();
  s.prepareHostWrite(reinterpret_cast<std::uintptr_t>(destination), bytes);
  auto* out = static_cast<std::byte*>(destination);
  DeviceWork work;
  std::vector<Piece> hostPieces;
  for (const Piece& piece : piecesOf(*region, source, bytes)) {
    if (region->pages[piece.page].host.kind != HostImageKind::None) {
      hostPieces.push_back(piece);
      continue;
    }
    const DevicePtr address = region->pageAddress(piece.page) + piece.offset;
    s.addDeviceUses(region, address, piece.bytes, Access::Input, work);
    work.operations.push_back([&s, out, piece, address, stream] {
      s.stats.bytesToHost += piece.bytes;
      return s.backend.copyToHost(out + piece.position, address, piece.bytes, stream, false);
    });
  }
  if (!hostPieces.empty()) {
    // Earlier work on the stream may write the destination: let it finish
    // before the host-side part lands.
    MQX_TRY(s.backend.synchronize(stream));
    for (const Piece& piece : hostPieces)
      readHostImage(region->pages[piece.page].host, piece.offset, piece.bytes, out + piece.position);
  }
  // Device-to-host copies complete before returning, as the driver's do for
  // pageable memory.
  return s.run(work, stream, true);
}

Status MemoryManager::copyDeviceToDevice(DevicePtr destination, DevicePtr source, std::size_t bytes,
                                         StreamHandle stream, bool synchronous) {
  if (bytes == 0) return Status::Success;
  LockScope scope(state_->mutex);
  auto& s = *state_;
  Region* to = s.directory.find(destination);
  Region* from = s.directory.find(source);
  if (to == nullptr && from == nullptr) return Status::InvalidValue;
  if ((to != nullptr && s.rangeRegion(destination, bytes) == nullptr) ||
      (from != nullptr && s.rangeRegion(source, bytes) == nullptr))
    return Status::InvalidValue;
  s.residency.poll();
  if (to != nullptr && from != nullptr && to != from) // a copy of a table is a table
    for (RegionId target : from->pointsTo)
      if (target != to->id && std::find(to->pointsTo.begin(), to->pointsTo.end(), target) == to->pointsTo.end())
        to->pointsTo.push_back(target);
  DeviceWork work;
  auto eager = [&](DevicePtr target, DevicePtr origin, std::size_t length) {
    s.addDeviceUses(from, origin, length, Access::Input, work);
    s.addDeviceUses(to, target, length, Access::Output, work);
    work.operations.push_back([&s, target, origin, length, stream] {
      s.stats.bytesOnDevice += length;
      return s.backend.copyOnDevice(target, origin, length, stream);
    });
  };
  if (to == nullptr) {
    eager(destination, source, bytes);
  } else {
    for (const Piece& piece : piecesOf(*to, destination, bytes)) {
      const DevicePtr origin = source + piece.position;
      if (from != nullptr && s.cloneImage(*to, piece, *from, origin)) continue;
      eager(to->pageAddress(piece.page) + piece.offset, origin, piece.bytes);
    }
  }
  return s.run(work, stream, synchronous);
}

Status MemoryManager::memset(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
                             StreamHandle stream, bool synchronous) {
  if (elementSize != 1 && elementSize != 2 && elementSize != 4) return Status::InvalidValue;
  if (destination % elementSize != 0) return Status::InvalidValue;
  if (count == 0) return Status::Success;
  if (count > (std::size_t{1} << 48) / elementSize) return Status::InvalidValue;
  LockScope scope(state_->mutex);
  auto& s = *state_;
  const std::size_t bytes = count * elementSize;
  Region* region = s.rangeRegion(destination, bytes);
  if (region == nullptr) return Status::InvalidValue;
  s.residency.poll();
  if (elementSize == 1) pattern &= 0xFFU;
  if (elementSize == 2) pattern &= 0xFFFFU;
  DeviceWork work;
  for (const Piece& piece : piecesOf(*region, destination, bytes))
    s.memsetPiece(*region, piece, pattern, elementSize, work, stream);
  return s.run(work, stream, synchronous);
}

Status MemoryManager::advise(DevicePtr address, Access access) {
  if (access == Access::None || static_cast<unsigned>(access) > 3) return Status::InvalidValue;
  LockScope scope(state_->mutex);
  Region* region = state_->directory.find(address);
  if (region == nullptr) return Status::InvalidValue;
  state_->references.advise(region->id, access);
  return Status::Success;
}

Status MemoryManager::launch(const device::KernelLaunch& launch) {
  LockScope scope(state_->mutex);
  auto& s = *state_;
  // The kernel's name is not known to the core: the function handle names it.
  trace::TraceSpan span(s.trace.get(), "launch", "launch", trace::kCurrentThreadTrack);
  span.argument("function", launch.function);
  s.residency.poll();
  ++s.stats.launches;
  std::vector<RegionReference>& references = s.launchReferences;
  bool referencesComplete = false;
  MQX_TRY(s.references.find(launch, &references, &referencesComplete));
  // Regions named in pointer tables the launch references are referenced
  // too, transitively (read and written: the table does not say how).
  for (std::size_t i = 0; i < references.size(); ++i)
    for (RegionId id : references[i].region->pointsTo) {
      Region* target = s.directory.byId(id);
      if (target == nullptr) continue;
      auto same = [&](const RegionReference& r) { return r.region == target; };
      if (std::find_if(references.begin(), references.end(), same) == references.end())
        references.push_back({target, Access::Both});
    }
  DeviceWork& work = s.launchWork;
  work.clear();
  const std::uint64_t now = s.residency.tick();
  for (const auto& reference : references) {
    Region& region = *reference.region;
    region.lastUse = now;
    ++region.useCount;
    for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
      PageState& page = region.pages[i];
      page.lastUse = now;
      ++page.useCount;
      if (!reads(reference.access) && !page.deviceValid && page.host.kind != HostImageKind::Zero)
        s.stats.bytesAvoidedLazy += region.pageDataBytes(i); // output only: no load
      work.uses.push_back({&region, i, reference.access});
      if (writes(reference.access)) work.written.emplace_back(&region, i);
    }
  }
  if (s.residency.sharesNode()) {
    std::size_t footprint = 0; // what the query's kernels actually use (its demand as it runs)
    for (const auto& reference : references)
      footprint += reference.region->reservedSize;
    s.residency.observeLaunchFootprint(footprint);
  }
  if (span.active()) {
    std::uint64_t referenced = 0;
    for (const auto& reference : references)
      referenced += reference.region->size;
    span.argument("referenced_bytes", referenced).argument("regions", references.size());
  }
  // A launch whose references are not known may reach any page: with pages
  // on host blocks it runs whatever it touches (docs/architecture.md).
  if (!referencesComplete && s.residency.mapsHost()) {
    work.reachesEveryPage = true;
    s.prepareEveryPage(references, work);
  }
  work.operations.push_back([&s, &launch] { return s.backend.launch(launch); });
  work.residentRegionsReferenced = s.config.referenceDetection == ReferenceDetection::All;
  work.usesUnique = true; // one reference per region, every page once
  return s.run(work, launch.stream, false);
}

Status MemoryManager::launchUnknown(StreamHandle stream, const std::function<Status()>& submit) {
  LockScope scope(state_->mutex);
  auto& s = *state_;
  trace::TraceSpan span(s.trace.get(), "launch (references unknown)", "launch", trace::kCurrentThreadTrack);
  s.residency.poll();
  ++s.stats.launches;
  std::vector<RegionReference> references;
  DeviceWork work;
  if (s.residency.mapsHost()) {
    work.reachesEveryPage = true;
    s.prepareEveryPage(references, work);
  } else {
    const std::uint64_t now = s.residency.tick();
    s.directory.forEach([&](Region& region) {
      region.lastUse = now;
      for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
        work.uses.push_back({&region, i, Access::Both});
        work.written.emplace_back(&region, i);
      }
    });
  }
  // The driver may write the application's pageable host memory while it
  // launches a graph (its memcpy nodes), on this thread and with the
  // manager's lock held: no copy-on-write protection may be left to fault.
  s.prepareHostWrite(0, std::numeric_limits<std::uintptr_t>::max());
  work.operations.push_back(submit);
  work.usesUnique = true;
  return s.run(work, stream, false);
}

void MemoryManager::prepareHostWrite(void* address, std::size_t bytes) {
  LockScope scope(state_->mutex);
  state_->prepareHostWrite(reinterpret_cast<std::uintptr_t>(address), bytes);
}

bool MemoryManager::onHostWriteFault(void* address) {
  if (insideManager) return false; // mqx itself wrote to protected memory: let it crash loudly
  LockScope scope(state_->mutex);
  auto& s = *state_;
  auto records = s.cow.onHostPage(reinterpret_cast<std::uintptr_t>(address));
  if (records.empty()) return s.cow.releaseLingering(reinterpret_cast<std::uintptr_t>(address));
  ++s.stats.cowFaults;
  for (const CowRecord& record : records)
    s.breakCow(record);
  return true;
}

void MemoryManager::onHostRelease(void* address, std::size_t bytes) {
  if (insideManager) return;
  LockScope scope(state_->mutex);
  state_->prepareHostWrite(reinterpret_cast<std::uintptr_t>(address), bytes);
}

bool MemoryManager::hasProtectedHostMemory() const { return state_->cow.anyProtected(); }

bool MemoryManager::isProtectedHostRange(const void* address, std::size_t bytes) const {
  return state_->cow.anyProtected() && state_->cow.overlapsProtected(reinterpret_cast<std::uintptr_t>(address), bytes);
}

std::size_t MemoryManager::evictForOtherProcess(std::size_t bytes, std::chrono::milliseconds patience,
                                                std::uint64_t preferred) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::unique_lock lock(state_->mutex, std::try_to_lock);
    if (lock.owns_lock()) {
      insideManager = true;
      const std::size_t freed = state_->residency.evictForOtherProcess(bytes, preferred);
      insideManager = false;
      return freed;
    }
    // An operation of this process yields to an older one with the lock
    // held: the yielding thread evicts for the requester.
    if (auto freed = state_->residency.handoff().request(bytes, preferred, deadline)) return *freed;
    if (state_->residency.waitingForOtherProcesses() || std::chrono::steady_clock::now() >= deadline) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void MemoryManager::poll() {
  LockScope scope(state_->mutex);
  state_->residency.poll();
}

Status MemoryManager::synchronizeAll() {
  LockScope scope(state_->mutex);
  return state_->residency.waitAll();
}

void MemoryManager::memoryInfo(std::size_t* freeBytes, std::size_t* totalBytes) const {
  LockScope scope(state_->mutex);
  const std::size_t limit = state_->budget->limit();
  const std::size_t used = std::min(limit, state_->budget->used());
  if (freeBytes != nullptr) *freeBytes = limit - used;
  if (totalBytes != nullptr) *totalBytes = limit;
}

Statistics MemoryManager::statistics() const {
  LockScope scope(state_->mutex);
  return state_->stats;
}

std::optional<ManagerUsage> MemoryManager::tryUsage() const {
  // A thread inside the manager already holds the lock: try_lock on it again
  // would be undefined.
  if (insideManager) return std::nullopt;
  std::unique_lock lock(state_->mutex, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return ManagerUsage{state_->stats, state_->swap.usedBytes(), state_->swap.reservedBytes()};
}

const Config& MemoryManager::config() const { return state_->config; }

void MemoryManager::finishTrace() {
  if (state_->trace != nullptr) state_->trace->finish(); // the recorder has its own lock
}

std::size_t MemoryManager::residentBytes() const {
  LockScope scope(state_->mutex);
  return state_->budget->used();
}

} // namespace mqx
