// MemoryManager: the per-process facade of the core. It gives the application
// virtual, paged device memory (docs/architecture.md decisions 2-8) on top of a
// DeviceBackend, with the semantics of the CUDA driver's memory API:
// allocations at stable addresses, copies and memsets in stream order as the
// application observes them, kernel launches that find their data resident.
//
// Thread-safe: every entry point takes the manager's lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "common/files.hpp"
#include "common/status.hpp"
#include "common/types.hpp"
#include "core/host_block_source.hpp"
#include "core/manager_options.hpp"
#include "core/statistics.hpp"
#include "core/usage_snapshot.hpp"
#include "device/device_backend.hpp"

namespace mqx {

class DeviceBudget;
struct ManagerState;

// The region that contains an address.
struct RegionInfo {
  DevicePtr base = 0;
  std::size_t size = 0;
};

// One piece of an allocation shared with other processes: `bytes` at
// `offset` from its base, and a descriptor of that physical memory
// (DeviceBackend::shareMapping), which goes to the other process.
struct SharedPiece {
  std::size_t offset = 0;
  std::size_t bytes = 0;
  FileDescriptor descriptor;
};

// What MemoryManager::share gives: the allocation's pieces in order.
struct SharedAllocation {
  DevicePtr base = 0;
  std::size_t size = 0;        // the bytes the program allocated
  std::size_t mappedBytes = 0; // the pieces' extent (size rounded up to the granularity)
  std::vector<SharedPiece> pieces;
};

class MemoryManager {
public:
  // `budget` may be shared with other processes (multi-process mode); when
  // null the manager keeps a private budget of options.deviceMemoryLimit (or
  // the backend's total memory when that is 0). `lender` (may be null)
  // gives the swap buffer host blocks before it creates any (mqxd's pool).
  MemoryManager(const ManagerOptions& options, device::DeviceBackend& backend,
                std::shared_ptr<DeviceBudget> budget = nullptr, std::shared_ptr<HostBlockSource> lender = nullptr);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  // cuMemAlloc / cuMemFree. Zero size is InvalidValue (as the driver);
  // a size that cannot fit in device budget + swap buffer is OutOfMemory.
  Status allocate(std::size_t bytes, DevicePtr* address);
  // A region at [base, base + bytes), a range the program reserved itself
  // (cuMemAddressReserve) where it maps an allocation of its own that mqx
  // manages (cuMemCreate + cuMemMap: PyTorch's expandable segments). Both
  // are multiples of the device granularity. Paged and counted as
  // allocate()'s; free() then leaves the range reserved.
  Status adopt(DevicePtr base, std::size_t bytes);
  Status free(DevicePtr address);

  // cuIpcGetMemHandle: shares the allocation that holds `address` with
  // other processes (docs/interposer.md, "Handles to other processes").
  // Every page is made resident and stays so until free(), counted in the
  // budget as before (Region::shared); its physical memory becomes
  // shareable: one piece per page, or for a region the program mapped
  // itself (its own VMM handle) one piece for the whole. NotSupported where
  // the device cannot share; OutOfMemory when it does not fit the budget.
  Status share(DevicePtr address, SharedAllocation* shared);
  // cuIpcOpenMemHandle: maps another process's shared allocation (its
  // pieces' descriptors, received over a socket) at a range of this
  // process. Not a managed region: its exporter keeps it resident.
  Status openShared(std::span<const SharedPiece> pieces, std::size_t mappedBytes, DevicePtr* address);
  // The same at `address`, inside a range the program reserved itself: a
  // handle of its own VMM mapped at a second address (cuMemMap), the same
  // bytes as at the first.
  Status openSharedAt(DevicePtr address, std::span<const SharedPiece> pieces, std::size_t mappedBytes);
  // cuIpcCloseMemHandle, or cuMemUnmap of that second address (the range
  // stays the program's). InvalidValue for an address neither gave.
  Status closeShared(DevicePtr address);

  bool isManaged(DevicePtr address) const;
  Status regionOf(DevicePtr address, RegionInfo* info) const;

  // Copies. `synchronous` gives the blocking API's semantics (cuMemcpyHtoD):
  // on return the copy is complete as far as the application can observe.
  Status copyHostToDevice(DevicePtr destination, const void* source, std::size_t bytes, StreamHandle stream,
                          bool synchronous);
  Status copyDeviceToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                          bool synchronous);
  // Either side may be unmanaged device memory (but not both).
  Status copyDeviceToDevice(DevicePtr destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                            bool synchronous);
  // cuMemsetD8/D16/D32: `count` elements of `elementSize` bytes.
  Status memset(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
                StreamHandle stream, bool synchronous);

  // cudaAdvice: the calling thread's next launch touches the region at
  // `address` with `access`. InvalidValue for unmanaged memory.
  Status advise(DevicePtr address, Access access);

  // A kernel launch: finds the referenced regions (advice, parameter scan or
  // all regions), makes them resident, launches through the backend and pins
  // them until the launch completes.
  Status launch(const device::KernelLaunch& launch);
  // Device work whose references are not known, enqueued on `stream` by
  // `submit` (a CUDA graph's launch): every page it may reach is prepared
  // (resident pages valid, pending pages' bytes in their host blocks) and
  // none moves until the work completes. Without host blocks, every region is
  // made resident first.
  Status launchUnknown(StreamHandle stream, const std::function<Status()>& submit);

  // Before the application's host memory [address, address + bytes) is
  // written by anyone but the application itself (a device-to-host copy the
  // interposer passes through, say): breaks copy-on-write protection there.
  void prepareHostWrite(void* address, std::size_t bytes);
  // The host memory observer entry points (hook/host_memory_hooks): a write
  // fault on a protected page (true if it was ours and is now writable) and
  // the release of host memory (free, realloc, munmap).
  bool onHostWriteFault(void* address);
  void onHostRelease(void* address, std::size_t bytes);
  // Lock-free: whether any host memory is write-protected right now.
  bool hasProtectedHostMemory() const;
  // Lock-free with respect to the manager: whether [address, address + bytes)
  // touches protected host memory.
  bool isProtectedHostRange(const void* address, std::size_t bytes) const;

  // Observes completed work and unpins its pages; called after the
  // application synchronises.
  void poll();
  // Waits for every launch and transfer mqx issued.
  Status synchronizeAll();
  // The application destroyed `stream` (its handle may be reused).
  void streamDestroyed(StreamHandle stream);

  // cuMemGetInfo as the application sees it: the managed budget.
  void memoryInfo(std::size_t* freeBytes, std::size_t* totalBytes) const;
  Statistics statistics() const;
  // The same and the swap buffer's use, without waiting. While another
  // thread holds the manager's lock (or this one does), the usage as the
  // manager last left a call after a reader asked (UsageSnapshot): at most
  // one call of the reader's late; nullopt until there is one. For
  // observers that must never block on the manager: the thread that serves
  // other processes' eviction requests publishes this for `mqx top` and
  // mqxd, and the manager may hold its lock while it waits for that
  // thread's answers.
  std::optional<ManagerUsage> tryUsage() const;
  // Completes the trace file (trace.file) of a process that never destroys
  // its manager; later trace points record nothing. No-op when tracing is off.
  void finishTrace();

  // Multi-process mode: another process needs device memory. Evicts up to
  // `bytes` of unpinned data; waits at most `patience` for the manager's lock
  // and not at all when this process is itself waiting for others (two
  // processes each waiting for the other's lock would deadlock), except
  // when an operation of this process yields to an older process: then the
  // yielding thread, which holds the lock, evicts for the requester. Returns
  // the bytes freed.
  // `preferred` (a region id this process published, 0 for none) is
  // evicted first when it is still evictable (global victim selection).
  std::size_t evictForOtherProcess(std::size_t bytes, std::chrono::milliseconds patience, std::uint64_t preferred = 0);

  // Bytes of device memory currently backed.
  std::size_t residentBytes() const;

private:
  // openShared (at 0: a range of its own) and openSharedAt.
  Status mapShared(std::span<const SharedPiece> pieces, std::size_t mappedBytes, DevicePtr at, DevicePtr* address);

  [[nodiscard]] Status admitRegion(std::size_t bytes, std::size_t reserved);
  [[nodiscard]] Status addRegion(DevicePtr base, std::size_t bytes, std::size_t reserved, bool adopted);

  std::unique_ptr<ManagerState> state_;
};

} // namespace mqx
