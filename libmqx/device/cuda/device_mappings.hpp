// DeviceMappings: the CUDA virtual memory management side of the backend.
// Ranges are reserved without memory (cuMemAddressReserve); map() backs a
// piece of a range with a fresh physical allocation (cuMemCreate, cuMemMap,
// cuMemSetAccess) and keeps its handle; unmap() unmaps and releases it.
//
// The driver can only unmap a whole mapping. When the core unmaps part of
// what it mapped in one call, the mapping is split: unmapped whole, and the
// parts that stay are mapped again onto the same physical allocation (no data
// moves). That physical memory is freed only once all of its parts are gone,
// so the core should unmap what it mapped (pages), and a warning says so.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "common/status.hpp"
#include "common/types.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/cuda/driver_handles.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

class DeviceMappings {
public:
  DeviceMappings(const DriverApi& api, CUdevice device);
  ~DeviceMappings();
  DeviceMappings(const DeviceMappings&) = delete;
  DeviceMappings& operator=(const DeviceMappings&) = delete;

  // The physical allocation granularity (cuMemGetAllocationGranularity).
  Status queryGranularity(std::size_t* granularity) const;

  Status reserve(std::size_t bytes, std::size_t alignment, DevicePtr* base);
  // Unmaps what is still mapped inside, then frees the range.
  Status release(DevicePtr base, std::size_t bytes);
  // InvalidValue, before anything is allocated, when part of the range is
  // mapped already.
  Status map(DevicePtr address, std::size_t bytes);
  // Maps host blocks (HostBlocks) under their addresses, all or none, with
  // one cuMemSetAccess per run of adjacent blocks; the blocks stay their
  // owner's. unmap() takes each away whole.
  Status mapHostBlocks(std::span<const HostMapping> blocks, const CUmemAccessDesc& access);
  Status unmap(DevicePtr address, std::size_t bytes);
  // DeviceBackend::shareMapping: the mappings that tile the range move onto
  // one new allocation created exportable (a POSIX file descriptor), their
  // bytes copied on `stream` (waited for), unless they are on one already;
  // then a descriptor of that allocation.
  Status share(DevicePtr address, std::size_t bytes, CUstream stream, int* descriptor);
  // DeviceBackend::mapShared: imports the allocation and maps it.
  Status mapShared(DevicePtr address, std::size_t bytes, int descriptor);

  std::size_t mappedBytes() const;

private:
  // One cuMemCreate allocation; released when its last mapping goes.
  struct Physical {
    PhysicalMemory memory;
    std::size_t bytes = 0;
    bool exportable = false; // created with a POSIX file descriptor handle type
    bool imported = false;   // another process's: counted nowhere here
  };
  // One cuMemMap mapping: [start, start + bytes) -> physical at offset.
  struct Mapping {
    std::size_t bytes = 0;
    std::size_t offset = 0;
    std::shared_ptr<Physical> physical; // null for a host block
  };

  CUmemAllocationProp allocationProperties(bool exportable = false) const;
  // Whether a mapping lies in [address, address + bytes). Call with mutex_ held.
  bool overlapsLocked(DevicePtr address, std::size_t bytes) const;
  Status mapOnto(DevicePtr address, std::size_t bytes, std::size_t offset, const std::shared_ptr<Physical>& physical);
  // Unmaps `start`'s mapping and maps back its parts outside [cutBegin, cutEnd).
  Status cut(DevicePtr start, DevicePtr cutBegin, DevicePtr cutEnd);
  Status unmapLocked(DevicePtr address, std::size_t bytes);

  const DriverApi& api_;
  CUdevice device_;
  mutable std::mutex mutex_;
  std::map<DevicePtr, std::size_t> reservations_;
  std::map<DevicePtr, Mapping> mappings_; // by start address
  std::size_t mappedBytes_ = 0;
  bool warnedSplit_ = false;
};

} // namespace mqx::device::cuda
