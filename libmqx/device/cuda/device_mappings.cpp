#include "device/cuda/device_mappings.hpp"

#include <iterator>
#include <vector>

#include "common/log.hpp"
#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {

DeviceMappings::DeviceMappings(const DriverApi& api, CUdevice device) : api_(api), device_(device) {}

DeviceMappings::~DeviceMappings() {
  // Give the address space back; the process may still run after mqx goes.
  std::vector<std::pair<DevicePtr, std::size_t>> ranges(reservations_.begin(), reservations_.end());
  for (const auto& [base, bytes] : ranges)
    (void)release(base, bytes); // release says a failure; the process goes on without the range
}

CUmemAllocationProp DeviceMappings::allocationProperties(bool exportable) const {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

Status DeviceMappings::queryGranularity(std::size_t* granularity) const {
  CUmemAllocationProp prop = allocationProperties();
  return toStatus(api_.cuMemGetAllocationGranularity(granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
}

Status DeviceMappings::reserve(std::size_t bytes, std::size_t alignment, DevicePtr* base) {
  CUdeviceptr address = 0;
  CUresult result = api_.cuMemAddressReserve(&address, bytes, alignment, 0, 0);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemAddressReserve", result));
    return toStatus(result);
  }
  std::lock_guard lock(mutex_);
  reservations_[address] = bytes;
  *base = address;
  return Status::Success;
}

Status DeviceMappings::release(DevicePtr base, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != bytes) return Status::InvalidValue;
  // Anything still mapped inside goes first: cuMemAddressFree refuses otherwise.
  auto first = mappings_.lower_bound(base);
  if (first != mappings_.end() && first->first < base + bytes) MQX_TRY(unmapLocked(base, bytes));
  CUresult result = api_.cuMemAddressFree(base, bytes);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemAddressFree", result));
    return toStatus(result);
  }
  reservations_.erase(it);
  return Status::Success;
}

Status DeviceMappings::mapOnto(DevicePtr address, std::size_t bytes, std::size_t offset,
                               const std::shared_ptr<Physical>& physical) {
  CUresult result = api_.cuMemMap(address, bytes, offset, physical->memory.get(), 0);
  if (result != CUDA_SUCCESS) return toStatus(result);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  result = api_.cuMemSetAccess(address, bytes, &access, 1);
  if (result != CUDA_SUCCESS) {
    api_.cuMemUnmap(address, bytes);
    return toStatus(result);
  }
  mappings_[address] = Mapping{bytes, offset, physical, {}};
  if (!physical->imported) mappedBytes_ += bytes;
  return Status::Success;
}

bool DeviceMappings::overlapsLocked(DevicePtr address, std::size_t bytes) const {
  auto next = mappings_.lower_bound(address);
  if (next != mappings_.end() && next->first < address + bytes) return true;
  return next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > address;
}

Status DeviceMappings::map(DevicePtr address, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (overlapsLocked(address, bytes)) return Status::InvalidValue;
  }
  auto physical = std::make_shared<Physical>();
  CUmemAllocationProp prop = allocationProperties();
  CUresult result = createPhysical(api_, bytes, prop, &physical->memory);
  if (result != CUDA_SUCCESS) {
    // Out of memory is the core's business (it evicts and retries): no log.
    if (result != CUDA_ERROR_OUT_OF_MEMORY) log(LogLevel::Warn, "{}", api_.describe("cuMemCreate", result));
    return toStatus(result);
  }
  physical->bytes = bytes;
  std::lock_guard lock(mutex_);
  Status status = mapOnto(address, bytes, 0, physical);
  if (!ok(status)) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemMap/cuMemSetAccess", toCuResult(status)));
    return status;
  }
  return Status::Success;
}

Status DeviceMappings::mapHostBlocks(std::span<const HostMapping> blocks, const CUmemAccessDesc& access) {
  std::lock_guard lock(mutex_);
  std::size_t mapped = 0;
  CUresult result = CUDA_SUCCESS;
  for (; mapped < blocks.size() && result == CUDA_SUCCESS; ++mapped) {
    const HostMapping& block = blocks[mapped];
    result = api_.cuMemMap(block.address, block.block.bytes, block.block.offset,
                           static_cast<CUmemGenericAllocationHandle>(block.block.handle), 0);
  }
  if (result != CUDA_SUCCESS) --mapped; // the failed one is not mapped
  // Access once per run of adjacent blocks: cuMemSetAccess may span several
  // mappings, and per call it costs about as much as one cuMemMap.
  for (std::size_t first = 0; first < mapped && result == CUDA_SUCCESS;) {
    std::size_t end = first + 1;
    DevicePtr runEnd = blocks[first].address + blocks[first].block.bytes;
    while (end < mapped && blocks[end].address == runEnd)
      runEnd += blocks[end++].block.bytes;
    result = api_.cuMemSetAccess(blocks[first].address, runEnd - blocks[first].address, &access, 1);
    first = end;
  }
  if (result != CUDA_SUCCESS) {
    for (std::size_t i = 0; i < mapped; ++i)
      api_.cuMemUnmap(blocks[i].address, blocks[i].block.bytes);
    log(LogLevel::Warn, "{}", api_.describe("cuMemMap/cuMemSetAccess (host block)", result));
    return toStatus(result);
  }
  for (const HostMapping& block : blocks)
    mappings_[block.address] = Mapping{block.block.bytes, 0, nullptr, {}};
  return Status::Success;
}

Status DeviceMappings::unmapWhole(DevicePtr start) {
  const Mapping& mapping = mappings_.at(start);
  const CUresult result = api_.cuMemUnmap(start, mapping.bytes);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemUnmap", result));
    return toStatus(result);
  }
  if (mapping.physical != nullptr && !mapping.physical->imported) mappedBytes_ -= mapping.bytes;
  mappings_.erase(start);
  return Status::Success;
}

Status DeviceMappings::releasePart(DevicePtr start, DevicePtr begin, DevicePtr end) {
  Mapping& mapping = mappings_.at(start);
  // The released parts, with [begin, end) merged in.
  std::map<DevicePtr, DevicePtr> merged;
  std::size_t newlyReleased = end - begin;
  for (const auto& [from, to] : mapping.released) {
    const DevicePtr overlapBegin = std::max(from, begin);
    const DevicePtr overlapEnd = std::min(to, end);
    if (overlapBegin < overlapEnd) newlyReleased -= overlapEnd - overlapBegin;
  }
  if (newlyReleased == 0) return Status::InvalidValue; // nothing of it is mapped
  DevicePtr mergedBegin = begin;
  DevicePtr mergedEnd = end;
  for (const auto& [from, to] : mapping.released) {
    if (to < mergedBegin || from > mergedEnd) {
      merged.emplace(from, to);
    } else {
      mergedBegin = std::min(mergedBegin, from);
      mergedEnd = std::max(mergedEnd, to);
    }
  }
  merged.emplace(mergedBegin, mergedEnd);
  mapping.released = std::move(merged);
  const auto& [firstBegin, firstEnd] = *mapping.released.begin();
  if (firstBegin == start && firstEnd == start + mapping.bytes) return unmapWhole(start);
  return Status::Success;
}

Status DeviceMappings::unmapLocked(DevicePtr address, std::size_t bytes) {
  DevicePtr end = address + bytes;
  // The mapping that starts at or before `address` may reach into the range.
  auto it = mappings_.upper_bound(address);
  if (it != mappings_.begin()) --it;
  std::vector<DevicePtr> overlapping;
  for (; it != mappings_.end() && it->first < end; ++it) {
    if (it->first + it->second.bytes > address) overlapping.push_back(it->first);
  }
  if (overlapping.empty()) return Status::InvalidValue;
  Status result = Status::Success;
  for (DevicePtr start : overlapping) {
    const Mapping& mapping = mappings_.at(start);
    if (mapping.physical == nullptr) { // a host block: only ever unmapped whole
      const CUresult unmapped = api_.cuMemUnmap(start, mapping.bytes);
      if (unmapped != CUDA_SUCCESS) result = toStatus(unmapped);
      mappings_.erase(start);
      continue;
    }
    const bool whole = start >= address && start + mapping.bytes <= end;
    const Status status =
        whole ? unmapWhole(start) : releasePart(start, std::max(start, address), std::min(start + mapping.bytes, end));
    if (!ok(status)) result = status;
  }
  return result;
}

Status DeviceMappings::unmap(DevicePtr address, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  return unmapLocked(address, bytes);
}

std::size_t DeviceMappings::mappedBytes() const {
  std::lock_guard lock(mutex_);
  return mappedBytes_;
}

} // namespace mqx::device::cuda

namespace mqx::device::cuda {

Status DeviceMappings::share(DevicePtr address, std::size_t bytes, CUstream stream, int* descriptor) {
  if (descriptor == nullptr || bytes == 0) return Status::InvalidValue;
  if (api_.cuMemExportToShareableHandle == nullptr) return Status::NotSupported;
  std::lock_guard lock(mutex_);
  // The mappings that tile the range, in order: each one map() made, or a
  // piece of an allocation an earlier share() made for the whole range.
  std::vector<std::pair<DevicePtr, Mapping>> tiles;
  for (DevicePtr at = address; at < address + bytes;) {
    auto it = mappings_.find(at);
    if (it == mappings_.end() || it->second.physical == nullptr || it->second.physical->imported ||
        !it->second.released.empty() || at + it->second.bytes > address + bytes)
      return Status::InvalidValue;
    tiles.emplace_back(at, it->second);
    at += it->second.bytes;
  }
  const std::shared_ptr<Physical>& first = tiles.front().second.physical;
  bool whole = first->exportable && first->bytes == bytes;
  for (const auto& [at, mapping] : tiles)
    whole = whole && mapping.physical == first && mapping.offset == at - address;
  if (!whole) {
    // Only an allocation created exportable can be exported: one is made
    // for the whole range, the bytes are copied into it through a second
    // range, and it takes the old ones' place (no work touches the range:
    // the caller drained it).
    auto physical = std::make_shared<Physical>();
    CUmemAllocationProp prop = allocationProperties(true);
    CUresult result = createPhysical(api_, bytes, prop, &physical->memory);
    if (result != CUDA_SUCCESS) {
      log(LogLevel::Warn, "{}", api_.describe("cuMemCreate (exportable)", result));
      return toStatus(result);
    }
    physical->bytes = bytes;
    physical->exportable = true;
    CUdeviceptr copy = 0;
    result = api_.cuMemAddressReserve(&copy, bytes, 0, 0, 0);
    if (result != CUDA_SUCCESS) return toStatus(result);
    Status status = mapOnto(copy, bytes, 0, physical);
    if (ok(status)) {
      for (const auto& [at, mapping] : tiles)
        if (result == CUDA_SUCCESS)
          result = api_.cuMemcpyDtoDAsync_v2(copy + (at - address), at, mapping.bytes, stream);
      if (result == CUDA_SUCCESS) result = api_.cuStreamSynchronize(stream);
      status = toStatus(result);
      if (const Status unmapped = unmapLocked(copy, bytes); !ok(unmapped) && ok(status)) status = unmapped;
    }
    api_.cuMemAddressFree(copy, bytes);
    if (!ok(status)) {
      log(LogLevel::Warn, "{}",
          api_.describe("copying shared pages onto their exportable allocation", toCuResult(status)));
      return status;
    }
    // The swap itself: the old mappings go (their allocations stay alive in
    // `tiles` until this returns), and the new allocation maps whole where
    // they were: the driver maps an allocation from its start only, so not
    // part by part. Should that fail, the old mappings come back: the bytes
    // are never only in memory nobody maps.
    std::size_t unmapped = 0;
    while (unmapped < tiles.size() && ok(status = unmapWhole(tiles[unmapped].first)))
      ++unmapped;
    if (ok(status)) status = mapOnto(address, bytes, 0, physical);
    if (!ok(status)) {
      log(LogLevel::Warn, "{}", api_.describe("mapping a shared range whole", toCuResult(status)));
      for (std::size_t k = 0; k < unmapped; ++k)
        if (const auto& [at, mapping] = tiles[k]; !ok(mapOnto(at, mapping.bytes, mapping.offset, mapping.physical)))
          log(LogLevel::Error, "mapping a page back at 0x{:x} failed: it lost its memory", at);
      return status;
    }
  }
  int exported = -1;
  CUresult result = api_.cuMemExportToShareableHandle(&exported, mappings_.at(address).physical->memory.get(),
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemExportToShareableHandle", result));
    return toStatus(result);
  }
  *descriptor = exported;
  return Status::Success;
}

Status DeviceMappings::mapShared(DevicePtr address, std::size_t bytes, int descriptor) {
  if (api_.cuMemImportFromShareableHandle == nullptr) return Status::NotSupported;
  {
    std::lock_guard lock(mutex_);
    if (overlapsLocked(address, bytes)) return Status::InvalidValue;
  }
  auto physical = std::make_shared<Physical>();
  CUmemGenericAllocationHandle handle = 0;
  // The driver takes the descriptor's number as the pointer's value.
  CUresult result =
      api_.cuMemImportFromShareableHandle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(descriptor)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemImportFromShareableHandle", result));
    return toStatus(result);
  }
  physical->memory = PhysicalMemory(handle, PhysicalMemoryReleaser{api_.cuMemRelease});
  physical->bytes = bytes;
  physical->imported = true;
  std::lock_guard lock(mutex_);
  return mapOnto(address, bytes, 0, physical); // the exporter's memory: not counted
}

} // namespace mqx::device::cuda
