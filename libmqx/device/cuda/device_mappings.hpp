// DeviceMappings: the CUDA virtual memory management side of the backend.
// Ranges are reserved without memory (cuMemAddressReserve); map() backs a
// piece of a range with a fresh physical allocation (cuMemCreate, cuMemMap,
// cuMemSetAccess) and keeps its handle; unmap() unmaps and releases it.
//
// The driver can only unmap a whole mapping, and maps an allocation from its
// start only (cuMemMap's offset must be zero: CUDA_ERROR_NOT_SUPPORTED
// otherwise, seen on the H100 with driver 580). So a mapping cannot be split.
// When the core unmaps part of one mapping (the pages of a range that
// share() moved onto one allocation, each unmapped as its region goes), that
// part is only marked released: the mapping, its memory and its count stay
// until every part is released, and then it is unmapped whole. Until then
// the part cannot be mapped again (map() refuses it as mapped).
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
  // then a descriptor of that allocation. The range is then one mapping, so
  // each tile's later unmap() releases a part (see the top).
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
    // Parts the core unmapped while the rest stays: [begin, end), disjoint.
    std::map<DevicePtr, DevicePtr> released;
  };

  CUmemAllocationProp allocationProperties(bool exportable = false) const;
  // Whether a mapping lies in [address, address + bytes). Call with mutex_ held.
  bool overlapsLocked(DevicePtr address, std::size_t bytes) const;
  Status mapOnto(DevicePtr address, std::size_t bytes, std::size_t offset, const std::shared_ptr<Physical>& physical);
  // Marks [begin, end) of `start`'s mapping released, and unmaps the mapping
  // whole once all of it is. InvalidValue when all of [begin, end) was
  // released already.
  Status releasePart(DevicePtr start, DevicePtr begin, DevicePtr end);
  // Unmaps `start`'s mapping whole (its physical memory goes with its last mapping).
  Status unmapWhole(DevicePtr start);
  Status unmapLocked(DevicePtr address, std::size_t bytes);

  const DriverApi& api_;
  CUdevice device_;
  mutable std::mutex mutex_;
  std::map<DevicePtr, std::size_t> reservations_;
  std::map<DevicePtr, Mapping> mappings_; // by start address
  std::size_t mappedBytes_ = 0;
};

} // namespace mqx::device::cuda
