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
#include "core/device_work.hpp"
#include "core/host_image.hpp"
#include "core/lazy_transfers.hpp"
#include "core/page_mapper.hpp"
#include "core/page_pieces.hpp"
#include "core/page_store.hpp"
#include "core/peer_eviction.hpp"
#include "core/reference_finder.hpp"
#include "core/region_directory.hpp"
#include "core/residency_manager.hpp"
#include "core/swap_buffer.hpp"
#include "core/swap_slots.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

// Set while a thread holds the manager's lock: a write fault taken then is
// a bug in mqx, and must not deadlock on the lock.
thread_local bool insideManager = false;

constexpr std::uintptr_t kHostPage = 4096;

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
std::unique_ptr<trace::TraceRecorder> openTrace(const TraceOptions& options, const device::DeviceBackend& backend) {
  try {
    return trace::TraceRecorder::open(options.file, fmt::format("mqx client ({} device)", backend.name()),
                                      options.bufferEvents);
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "{}; tracing stays off", error.what());
    return nullptr;
  }
}

// The manager's parts, under its lock. Each component owns one concern; the
// manager's own state is its region numbering and the launch path's scratch.
struct ManagerState {
  ManagerState(const ManagerOptions& managerOptions, device::DeviceBackend& device,
               std::shared_ptr<DeviceBudget> sharedBudget, std::shared_ptr<HostBlockSource> hostBlockLender)
      : options(managerOptions), backend(device),
        pageSize(roundUp(std::max(options.pageSize, backend.granularity()), backend.granularity())),
        lender(std::move(hostBlockLender)),
        budget(sharedBudget ? std::move(sharedBudget)
                            : std::make_shared<LocalDeviceBudget>(
                                  options.deviceMemoryLimit != 0 ? options.deviceMemoryLimit : device.totalMemory())),
        swap(device, options.swapBufferLimit, options.pinnedSwap, lender.get()), slots(device, swap),
        trace(openTrace(options.trace, device)), mapper(backend, *budget, slots, cow, stats),
        peers(std::chrono::milliseconds(options.residency.evictionTimeoutMilliseconds), *budget, stats, trace.get()),
        residency(ResidencyContext{options.residency, backend, *budget, mapper, slots, directory, peers, stats,
                                   trace.get(), pageSize},
                  makeReplacementPolicy(options.policy)),
        references(options.references, backend, directory),
        runner(residency, mapper, peers, directory, backend, trace.get()),
        lazy(LazyTransferOptions{options.lazyTransfer}, mapper, slots, cow, directory, backend, stats) {}

  // Validates that [address, address + bytes) lies inside one managed region.
  Region* rangeRegion(DevicePtr address, std::size_t bytes) {
    Region* region = directory.find(address);
    if (region == nullptr || bytes > region->base + region->size - address) return nullptr;
    return region;
  }

  const ManagerOptions options;
  device::DeviceBackend& backend;
  const std::size_t pageSize;              // before the residency manager, which sizes its spare by it
  std::shared_ptr<HostBlockSource> lender; // outlives the swap buffer, which gives its blocks back
  std::shared_ptr<DeviceBudget> budget;
  SwapBuffer swap;
  SwapSlots slots;
  CowTracker cow;
  RegionDirectory directory;
  Statistics stats;
  std::unique_ptr<trace::TraceRecorder> trace; // before the parts that record into it
  PageMapper mapper;
  PeerEviction peers; // evicts for other processes through `residency`
  ResidencyManager residency;
  ReferenceFinder references;
  DeviceWorkRunner runner;
  LazyTransfers lazy;
  RegionId nextRegion = 1;
  // Other processes' allocations mapped here (openShared): base -> the
  // pieces' (offset, bytes), and the range's extent.
  struct OpenedShared {
    std::size_t mappedBytes = 0;
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    bool ownRange = true; // openShared reserved it; openSharedAt mapped into the program's
  };
  std::map<DevicePtr, OpenedShared> openedShared;
  mutable std::mutex mutex;
  // Scratch of the launch path, reused under `mutex` so that a launch
  // allocates nothing once they have grown.
  std::vector<RegionReference> launchReferences;
  DeviceWork launchWork;
  // What tryUsage answers while the lock is busy (LockScope stores it).
  UsageSnapshot usageSnapshot;
};

namespace {

// The counters and the swap buffer's gauges; call with the lock held.
Statistics statisticsWithGauges(const ManagerState& state) {
  Statistics stats = state.stats;
  stats.swapBytesHeld = state.swap.reservedBytes();
  stats.swapBytesBorrowed = state.swap.lentBytes();
  return stats;
}

ManagerUsage usageOf(const ManagerState& state) {
  return ManagerUsage{statisticsWithGauges(state), state.swap.usedBytes(), state.swap.reservedBytes(),
                      state.swap.lentBytes()};
}

// The manager's lock for one call. As the call leaves, with the lock still
// held, it stores the usage a reader asked for (UsageSnapshot).
struct LockScope {
  explicit LockScope(ManagerState& managerState) : state(managerState), lock(managerState.mutex) {
    insideManager = true;
  }
  LockScope(ManagerState& managerState, std::try_to_lock_t)
      : state(managerState), lock(managerState.mutex, std::try_to_lock) {
    if (lock.owns_lock()) insideManager = true;
  }
  ~LockScope() {
    if (!lock.owns_lock()) return;
    if (state.usageSnapshot.requested()) state.usageSnapshot.store(usageOf(state));
    insideManager = false;
  }
  LockScope(const LockScope&) = delete;
  LockScope& operator=(const LockScope&) = delete;

  ManagerState& state;
  std::unique_lock<std::mutex> lock;
};

} // namespace

MemoryManager::MemoryManager(const ManagerOptions& options, device::DeviceBackend& backend,
                             std::shared_ptr<DeviceBudget> budget, std::shared_ptr<HostBlockSource> lender)
    : state_(std::make_unique<ManagerState>(options, backend, std::move(budget), std::move(lender))) {}

MemoryManager::~MemoryManager() {
  LockScope scope(*state_);
  if (Status waited = state_->residency.waitAll(); !ok(waited))
    log(LogLevel::Error, "in-flight work not awaited at exit: {}", toString(waited));
  std::vector<RegionId> ids;
  state_->directory.forEach([&](Region& region) { ids.push_back(region.id); });
  for (RegionId id : ids) {
    Region* region = state_->directory.byId(id);
    if (Status status = state_->mapper.releaseRegion(*region); !ok(status))
      log(LogLevel::Error, "region {} not released at exit: {}", id, toString(status));
    state_->peers.publish(*region); // nothing resident: withdrawn
    if (!region->adopted) (void)state_->backend.release(region->base, region->reservedSize);
    state_->directory.remove(id);
  }
}

Status MemoryManager::allocate(std::size_t bytes, DevicePtr* address) {
  if (address == nullptr || bytes == 0) return Status::InvalidValue;
  LockScope scope(*state_);
  const std::size_t granularity = state_->backend.granularity();
  if (bytes > (std::size_t{1} << 48)) return Status::OutOfMemory;
  const std::size_t reserved = roundUp(bytes, granularity);
  MQX_TRY(admitRegion(bytes, reserved));
  DevicePtr base = 0;
  MQX_TRY(state_->backend.reserve(reserved, &base));
  MQX_TRY(addRegion(base, bytes, reserved, false));
  *address = base;
  return Status::Success;
}

Status MemoryManager::adopt(DevicePtr base, std::size_t bytes) {
  LockScope scope(*state_);
  const std::size_t granularity = state_->backend.granularity();
  if (bytes == 0 || base % granularity != 0 || bytes % granularity != 0) return Status::InvalidValue;
  if (bytes > (std::size_t{1} << 48)) return Status::OutOfMemory;
  // The range must not overlap a region: the program maps into its own
  // reservation, which no region of mqx's can share.
  if (state_->directory.overlaps(base, bytes)) return Status::InvalidValue;
  MQX_TRY(admitRegion(bytes, bytes));
  return addRegion(base, bytes, bytes, true);
}

// Call with the lock held. Whether a region of `bytes` (`reserved` with its
// padding) may be allocated: every byte must fit somewhere, and a region
// must fit the device to be usable by a kernel at all. Where pages map host
// blocks, a kernel can use a region larger than the budget (what gets no
// device memory runs from host memory).
Status MemoryManager::admitRegion(std::size_t bytes, std::size_t reserved) {
  auto& s = *state_;
  const bool largerThanBudget = reserved > s.budget->limit() && !s.mapper.mapsHost();
  if (largerThanBudget || s.directory.totalBytes() + bytes > s.budget->limit() + s.swap.limit()) {
    log(LogLevel::Info, "allocation of {} bytes refused: device budget {} + swap {} , {} allocated", bytes,
        s.budget->limit(), s.swap.limit(), s.directory.totalBytes());
    return Status::OutOfMemory;
  }
  return Status::Success;
}

// Call with the lock held: the region over [base, base + reserved).
Status MemoryManager::addRegion(DevicePtr base, std::size_t bytes, std::size_t reserved, bool adopted) {
  auto& s = *state_;
  auto region = std::make_unique<Region>();
  region->id = s.nextRegion++;
  region->base = base;
  region->size = bytes;
  region->reservedSize = reserved;
  region->adopted = adopted;
  region->pageSize = s.options.pageCoherence ? std::min(s.pageSize, reserved) : reserved; // NoPage: one page
  region->pages.resize((reserved + region->pageSize - 1) / region->pageSize);
  Region& added = *region;
  s.directory.add(std::move(region));
  if (s.mapper.mapsHost()) {
    MQX_TRY(s.mapper.mapNewRegion(added));
    s.peers.publish(added);
  }
  return Status::Success;
}

Status MemoryManager::free(DevicePtr address) {
  LockScope scope(*state_);
  auto& s = *state_;
  Region* region = s.directory.byBase(address);
  if (region == nullptr) return Status::InvalidValue;
  // The driver's free waits for work using the memory; so do we.
  MQX_TRY(s.residency.waitUnreached(*region));
  for (std::uint32_t i = 0; i < region->pageCount(); ++i)
    s.lazy.countAvoidedLoad(*region, i);
  const Status released = s.mapper.releaseRegion(*region);
  s.peers.publish(*region); // nothing resident: withdrawn
  MQX_TRY(released);
  if (!region->adopted) MQX_TRY(s.backend.release(region->base, region->reservedSize));
  s.references.forget(region->id);
  const RegionId gone = region->id;
  s.directory.remove(gone);
  s.directory.forEach([&](Region& table) { std::erase(table.pointsTo, gone); });
  return Status::Success;
}

Status MemoryManager::share(DevicePtr address, SharedAllocation* shared) {
  if (shared == nullptr) return Status::InvalidValue;
  LockScope scope(*state_);
  auto& s = *state_;
  Region* region = s.directory.find(address);
  if (region == nullptr) return Status::InvalidValue;
  s.residency.poll();
  if (!region->shared) {
    // Every page resident and its device memory the valid copy (read and
    // written: loaded if its bytes are elsewhere, no host image kept), then
    // no work of ours in flight while the backend may replace the memory
    // under the pages with a shareable copy.
    DeviceWork work;
    work.addUses(region, region->base, region->size, Access::Both);
    work.operations.push_back([] { return Status::Success; });
    MQX_TRY(s.runner.run(work, StreamHandle{}, true));
    MQX_TRY(s.residency.waitAll());
    for (const PageState& page : region->pages)
      if (!page.backed()) return Status::OutOfMemory;
    region->shared = true;
  }
  SharedAllocation result{region->base, region->size, region->reservedSize, {}};
  if (region->adopted) {
    // The program's own handle is one physical allocation to whoever it
    // gives it (cuMemExportToShareableHandle's one descriptor, a second
    // mapping of it): its pages move onto one, each at its offset.
    int descriptor = -1;
    MQX_TRY(s.backend.shareMapping(region->base, region->reservedSize, &descriptor));
    result.pieces.push_back({0, region->reservedSize, FileDescriptor(descriptor)});
    *shared = std::move(result);
    return Status::Success;
  }
  for (std::uint32_t i = 0; i < region->pageCount(); ++i) {
    int descriptor = -1;
    MQX_TRY(s.backend.shareMapping(region->pageAddress(i), region->pageMappedBytes(i), &descriptor));
    result.pieces.push_back({region->pageOffset(i), region->pageMappedBytes(i), FileDescriptor(descriptor)});
  }
  *shared = std::move(result);
  return Status::Success;
}

Status MemoryManager::openShared(std::span<const SharedPiece> pieces, std::size_t mappedBytes, DevicePtr* address) {
  if (address == nullptr) return Status::InvalidValue;
  return mapShared(pieces, mappedBytes, 0, address);
}

Status MemoryManager::openSharedAt(DevicePtr address, std::span<const SharedPiece> pieces, std::size_t mappedBytes) {
  if (address == 0) return Status::InvalidValue;
  DevicePtr mappedAt = address;
  return mapShared(pieces, mappedBytes, address, &mappedAt);
}

Status MemoryManager::mapShared(std::span<const SharedPiece> pieces, std::size_t mappedBytes, DevicePtr at,
                                DevicePtr* address) {
  auto& s = *state_;
  const std::size_t granularity = s.backend.granularity();
  if (pieces.empty() || mappedBytes == 0 || mappedBytes % granularity != 0 || at % granularity != 0)
    return Status::InvalidValue;
  for (const SharedPiece& piece : pieces)
    if (piece.bytes == 0 || piece.offset % granularity != 0 || piece.bytes % granularity != 0 ||
        piece.offset > mappedBytes || piece.bytes > mappedBytes - piece.offset || !piece.descriptor.valid())
      return Status::InvalidValue;
  LockScope scope(s);
  const bool ownRange = at == 0;
  DevicePtr base = at;
  if (ownRange) MQX_TRY(s.backend.reserve(mappedBytes, &base));
  ManagerState::OpenedShared opened{mappedBytes, {}, ownRange};
  Status status = Status::Success;
  for (const SharedPiece& piece : pieces) {
    status = s.backend.mapShared(base + piece.offset, piece.bytes, piece.descriptor.get());
    if (!ok(status)) break;
    opened.pieces.emplace_back(piece.offset, piece.bytes);
  }
  if (!ok(status)) {
    for (const auto& [offset, bytes] : opened.pieces)
      (void)s.backend.unmap(base + offset, bytes); // undoing: the first failure is what the caller hears
    if (ownRange) (void)s.backend.release(base, mappedBytes);
    return status;
  }
  s.openedShared.emplace(base, std::move(opened));
  *address = base;
  return Status::Success;
}

Status MemoryManager::closeShared(DevicePtr address) {
  LockScope scope(*state_);
  auto& s = *state_;
  auto it = s.openedShared.find(address);
  if (it == s.openedShared.end()) return Status::InvalidValue;
  // The driver's close waits for nothing either: the program synchronises
  // before it closes what its work still uses.
  Status status = Status::Success;
  for (const auto& [offset, bytes] : it->second.pieces)
    if (const Status unmapped = s.backend.unmap(address + offset, bytes); !ok(unmapped) && ok(status))
      status = unmapped;
  if (it->second.ownRange)
    if (const Status released = s.backend.release(address, it->second.mappedBytes); !ok(released) && ok(status))
      status = released;
  s.openedShared.erase(it);
  return status;
}

bool MemoryManager::isManaged(DevicePtr address) const {
  LockScope scope(*state_);
  return state_->directory.find(address) != nullptr;
}

Status MemoryManager::regionOf(DevicePtr address, RegionInfo* info) const {
  LockScope scope(*state_);
  const Region* region = state_->directory.find(address);
  if (region == nullptr || info == nullptr) return Status::InvalidValue;
  *info = RegionInfo{region->base, region->size};
  return Status::Success;
}

Status MemoryManager::copyHostToDevice(DevicePtr destination, const void* source, std::size_t bytes,
                                       StreamHandle stream, bool synchronous) {
  if (bytes == 0) return Status::Success;
  if (source == nullptr) return Status::InvalidValue;
  LockScope scope(*state_);
  auto& s = *state_;
  Region* region = s.rangeRegion(destination, bytes);
  if (region == nullptr) return Status::InvalidValue;
  trace::TraceSpan span(s.trace.get(), "copy H2D (application)", "transfer", trace::kCurrentThreadTrack);
  span.argument("bytes", bytes).argument("region", region->id);
  s.residency.poll();
  s.stats.bytesRequestedToDevice += bytes;
  const auto* bytesIn = static_cast<const std::byte*>(source);
  s.directory.notePointers(*region, bytesIn, bytes);
  // Only host pages that lie wholly inside the source are write-protected:
  // the partial pages at either end hold other data (malloc's chunk headers,
  // neighbouring allocations) that any thread may write, mqx's own included.
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  const std::uintptr_t safeStart = roundUp(start, kHostPage);
  const std::uintptr_t safeEnd = (start + bytes) / kHostPage * kHostPage;
  const bool cowAllowed =
      s.options.copyOnWrite && bytes >= s.options.cowMinBytes && safeEnd > safeStart && !onCurrentStack(source);
  // Protect the safe range once, so that per-page protection finds the host
  // pages already described (one /proc/self/maps read per copy).
  const PageKey wholeCopy{0, 0};
  const bool sourceProtected =
      cowAllowed && s.cow.protect(reinterpret_cast<const void*>(safeStart), safeEnd - safeStart, wholeCopy);
  DeviceWork work;
  Status lazyStatus = Status::Success;
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
    bool done = false;
    lazyStatus = s.lazy.copyFromHost(*region, piece, bytesIn + piece.position, extent, &done);
    if (!ok(lazyStatus)) break;
    if (done) continue;
    // Eager: the page is in use on the device, holds the only copy, laziness
    // is off, or the swap buffer is full.
    const DevicePtr address = region->pageAddress(piece.page) + piece.offset;
    work.addUses(region, address, piece.bytes, Access::Output);
    work.operations.push_back([&s, address, from = bytesIn + piece.position, length = piece.bytes, stream] {
      s.stats.bytesToDevice += length;
      return s.backend.copyToDevice(address, from, length, stream, false);
    });
  }
  if (sourceProtected) s.cow.unprotect(reinterpret_cast<const void*>(safeStart), safeEnd - safeStart, wholeCopy);
  MQX_TRY(lazyStatus);
  // Eager pieces read the application's buffer, which may be reused as soon
  // as we return: wait for them.
  return s.runner.run(work, stream, true);
}

Status MemoryManager::copyDeviceToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                                       bool synchronous) {
  if (bytes == 0) return Status::Success;
  if (destination == nullptr) return Status::InvalidValue;
  LockScope scope(*state_);
  auto& s = *state_;
  Region* region = s.rangeRegion(source, bytes);
  if (region == nullptr) return Status::InvalidValue;
  trace::TraceSpan span(s.trace.get(), "copy D2H (application)", "transfer", trace::kCurrentThreadTrack);
  span.argument("bytes", bytes).argument("region", region->id);
  s.residency.poll();
  MQX_TRY(s.lazy.prepareHostWrite(reinterpret_cast<std::uintptr_t>(destination), bytes));
  auto* out = static_cast<std::byte*>(destination);
  DeviceWork work;
  std::vector<Piece> hostPieces;
  for (const Piece& piece : piecesOf(*region, source, bytes)) {
    if (region->pages[piece.page].host().kind != HostImageKind::None) {
      hostPieces.push_back(piece);
      continue;
    }
    const DevicePtr address = region->pageAddress(piece.page) + piece.offset;
    work.addUses(region, address, piece.bytes, Access::Input);
    work.operations.push_back([&s, out, piece, address, stream] {
      s.stats.bytesToHost += piece.bytes;
      return s.backend.copyToHost(out + piece.position, address, piece.bytes, stream, false);
    });
  }
  if (!hostPieces.empty()) {
    // Earlier work on the stream may write the destination: let it finish
    // before the host-side part lands.
    MQX_TRY(s.backend.synchronize(stream));
    // A page whose host block is its image and which in-flight work names
    // (its staged write-back, ResidencyManager::evict, still filling it, or
    // a kernel running from it) is read only once that work is done.
    for (const Piece& piece : hostPieces)
      if (const PageState& page = region->pages[piece.page]; page.hostMapped() && page.pinned())
        MQX_TRY(s.residency.waitUnpinned(page));
    for (const Piece& piece : hostPieces)
      readHostImage(region->pages[piece.page].host(), piece.offset, piece.bytes, out + piece.position);
  }
  // Device-to-host copies complete before returning, as the driver's do for
  // pageable memory.
  return s.runner.run(work, stream, true);
}

Status MemoryManager::copyDeviceToDevice(DevicePtr destination, DevicePtr source, std::size_t bytes,
                                         StreamHandle stream, bool synchronous) {
  if (bytes == 0) return Status::Success;
  LockScope scope(*state_);
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
    work.addUses(from, origin, length, Access::Input);
    work.addUses(to, target, length, Access::Output);
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
      bool done = false;
      if (from != nullptr) MQX_TRY(s.lazy.copyImage(*to, piece, *from, origin, &done));
      if (!done) eager(to->pageAddress(piece.page) + piece.offset, origin, piece.bytes);
    }
  }
  return s.runner.run(work, stream, synchronous);
}

Status MemoryManager::memset(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
                             StreamHandle stream, bool synchronous) {
  if (elementSize != 1 && elementSize != 2 && elementSize != 4) return Status::InvalidValue;
  if (destination % elementSize != 0) return Status::InvalidValue;
  if (count == 0) return Status::Success;
  if (count > (std::size_t{1} << 48) / elementSize) return Status::InvalidValue;
  LockScope scope(*state_);
  auto& s = *state_;
  const std::size_t bytes = count * elementSize;
  Region* region = s.rangeRegion(destination, bytes);
  if (region == nullptr) return Status::InvalidValue;
  s.residency.poll();
  if (elementSize == 1) pattern &= 0xFFU;
  if (elementSize == 2) pattern &= 0xFFFFU;
  DeviceWork work;
  for (const Piece& piece : piecesOf(*region, destination, bytes)) {
    bool done = false;
    MQX_TRY(s.lazy.fill(*region, piece, pattern, elementSize, &done));
    if (done) continue;
    const DevicePtr address = region->pageAddress(piece.page) + piece.offset;
    work.addUses(region, address, piece.bytes, Access::Output);
    work.operations.push_back([&s, address, pattern, elementSize, length = piece.bytes, stream] {
      s.stats.bytesFilledOnDevice += length;
      return s.backend.fill(address, pattern, elementSize, length / elementSize, stream);
    });
  }
  return s.runner.run(work, stream, synchronous);
}

Status MemoryManager::advise(DevicePtr address, Access access) {
  if (access == Access::None || static_cast<unsigned>(access) > 3) return Status::InvalidValue;
  LockScope scope(*state_);
  Region* region = state_->directory.find(address);
  if (region == nullptr) return Status::InvalidValue;
  state_->references.advise(region->id, access);
  return Status::Success;
}

Status MemoryManager::launch(const device::KernelLaunch& launch) {
  LockScope scope(*state_);
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
  const std::uint64_t now = s.peers.tick();
  for (const auto& reference : references) {
    Region& region = *reference.region;
    region.used(now);
    ++region.useCount;
    for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
      PageState& page = region.pages[i];
      PageStore::used(page, now);
      if (!reads(reference.access) && !page.deviceValid() && page.host().kind != HostImageKind::Zero)
        s.stats.bytesAvoidedLazy += region.pageDataBytes(i); // output only: no load
      work.uses.push_back({&region, i, reference.access});
      if (writes(reference.access)) work.written.emplace_back(&region, i);
    }
  }
  if (s.peers.sharesNode()) {
    std::size_t footprint = 0; // what the query's kernels actually use (its demand as it runs)
    for (const auto& reference : references)
      footprint += reference.region->reservedSize;
    s.peers.observeLaunchFootprint(footprint);
  }
  if (span.active()) {
    std::uint64_t referenced = 0;
    for (const auto& reference : references)
      referenced += reference.region->size;
    span.argument("referenced_bytes", referenced).argument("regions", references.size());
  }
  // A launch whose references are not known may reach any page: with pages
  // on host blocks it runs whatever it touches (docs/architecture.md).
  if (!referencesComplete && s.mapper.mapsHost()) {
    work.reachesEveryPage = true;
    MQX_TRY(s.runner.prepareEveryPage(references, work));
  }
  work.operations.push_back([&s, &launch] { return s.backend.launch(launch); });
  work.residentRegionsReferenced = s.options.references.detection == ReferenceDetection::All;
  work.usesUnique = true; // one reference per region, every page once
  return s.runner.run(work, launch.stream, false);
}

Status MemoryManager::launchUnknown(StreamHandle stream, const std::function<Status()>& submit) {
  LockScope scope(*state_);
  auto& s = *state_;
  trace::TraceSpan span(s.trace.get(), "launch (references unknown)", "launch", trace::kCurrentThreadTrack);
  s.residency.poll();
  ++s.stats.launches;
  std::vector<RegionReference> references;
  DeviceWork work;
  if (s.mapper.mapsHost()) {
    work.reachesEveryPage = true;
    MQX_TRY(s.runner.prepareEveryPage(references, work));
  } else {
    const std::uint64_t now = s.peers.tick();
    s.directory.forEach([&](Region& region) {
      region.used(now);
      for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
        work.uses.push_back({&region, i, Access::Both});
        work.written.emplace_back(&region, i);
      }
    });
  }
  // The driver may write the application's pageable host memory while it
  // launches a graph (its memcpy nodes), on this thread and with the
  // manager's lock held: no copy-on-write protection may be left to fault.
  MQX_TRY(s.lazy.prepareHostWrite(0, std::numeric_limits<std::uintptr_t>::max()));
  work.operations.push_back(submit);
  work.usesUnique = true;
  return s.runner.run(work, stream, false);
}

void MemoryManager::prepareHostWrite(void* address, std::size_t bytes) {
  LockScope scope(*state_);
  if (Status status = state_->lazy.prepareHostWrite(reinterpret_cast<std::uintptr_t>(address), bytes); !ok(status))
    log(LogLevel::Error, "copy-on-write sources not saved before a host write: {}", toString(status));
}

bool MemoryManager::onHostWriteFault(void* address) {
  if (insideManager) return false; // mqx itself wrote to protected memory: let it crash loudly
  LockScope scope(*state_);
  auto& s = *state_;
  auto records = s.cow.onHostPage(reinterpret_cast<std::uintptr_t>(address));
  if (records.empty()) return s.cow.releaseLingering(reinterpret_cast<std::uintptr_t>(address));
  ++s.stats.cowFaults;
  for (const CowRecord& record : records)
    if (Status status = s.lazy.breakCow(record); !ok(status))
      log(LogLevel::Error, "a copy-on-write source not saved before its write: {}", toString(status));
  return true;
}

void MemoryManager::onHostRelease(void* address, std::size_t bytes) {
  if (insideManager) return;
  LockScope scope(*state_);
  if (Status status = state_->lazy.prepareHostWrite(reinterpret_cast<std::uintptr_t>(address), bytes); !ok(status))
    log(LogLevel::Error, "copy-on-write sources not saved before a host release: {}", toString(status));
}

bool MemoryManager::hasProtectedHostMemory() const { return state_->cow.anyProtected(); }

bool MemoryManager::isProtectedHostRange(const void* address, std::size_t bytes) const {
  return state_->cow.anyProtected() && state_->cow.overlapsProtected(reinterpret_cast<std::uintptr_t>(address), bytes);
}

std::size_t MemoryManager::evictForOtherProcess(std::size_t bytes, std::chrono::milliseconds patience,
                                                std::uint64_t preferred) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    if (LockScope scope(*state_, std::try_to_lock); scope.lock.owns_lock())
      return state_->peers.evictForOtherProcess(bytes, preferred, state_->residency);
    // An operation of this process yields to an older one with the lock
    // held: the yielding thread evicts for the requester.
    if (auto freed = state_->peers.handoff().request(bytes, preferred, deadline)) return *freed;
    if (state_->peers.waitingForOtherProcesses() || std::chrono::steady_clock::now() >= deadline) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void MemoryManager::poll() {
  LockScope scope(*state_);
  state_->residency.poll();
}

Status MemoryManager::synchronizeAll() {
  LockScope scope(*state_);
  return state_->residency.waitAll();
}

void MemoryManager::streamDestroyed(StreamHandle stream) {
  LockScope scope(*state_);
  state_->residency.forgetStream(stream);
}

void MemoryManager::memoryInfo(std::size_t* freeBytes, std::size_t* totalBytes) const {
  LockScope scope(*state_);
  const std::size_t limit = state_->budget->limit();
  const std::size_t used = std::min(limit, state_->budget->used());
  std::size_t free = limit - used;
  std::size_t total = limit;
  if (const double factor = state_->options.reportedOversubscription; factor > 1.0) {
    // A device larger than the budget: what the process may still allocate
    // of it (its allocations are paged), never more than budget and swap
    // buffer hold together.
    const long double scaled = static_cast<long double>(limit) * factor;
    total =
        static_cast<std::size_t>(std::min<long double>(scaled, static_cast<long double>(limit) + state_->swap.limit()));
    total = std::max(total, limit);
    const std::size_t allocated = state_->directory.totalBytes();
    free = std::max(free, total > allocated ? total - allocated : 0);
    free = std::min(free, total);
  }
  if (freeBytes != nullptr) *freeBytes = free;
  if (totalBytes != nullptr) *totalBytes = total;
}

Statistics MemoryManager::statistics() const {
  LockScope scope(*state_);
  return statisticsWithGauges(*state_);
}

std::optional<ManagerUsage> MemoryManager::tryUsage() const {
  // A thread inside the manager already holds the lock: try_lock on it again
  // would be undefined.
  if (!insideManager) {
    std::unique_lock lock(state_->mutex, std::try_to_lock);
    if (lock.owns_lock()) return usageOf(*state_);
  }
  return state_->usageSnapshot.readAndRequest();
}

void MemoryManager::finishTrace() {
  if (state_->trace != nullptr) state_->trace->finish(); // the recorder has its own lock
}

std::size_t MemoryManager::residentBytes() const {
  LockScope scope(*state_);
  return state_->budget->used();
}

} // namespace mqx
