// The program's own VMM allocations that mqx manages (vmm_hooks.cpp): what
// cuMemCreate handed out in place of a physical allocation, and where the
// program mapped each. The handle stands for bytes not yet placed anywhere;
// cuMemMap makes them a region of mqx's at the program's address
// (MemoryManager::adopt), which pages them like any allocation. A handle
// maps whole; while mapped it may be mapped at further addresses (aliases,
// the same bytes); it is gone when the program has released every
// reference and unmapped it everywhere. Handles of mqx's are marked by their top
// bit, which the driver's (addresses of its objects) never set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/types.hpp"

namespace mqx {
class MemoryManager;
}

namespace mqx::hook {

class ProgramAllocations {
public:
  using Handle = unsigned long long; // CUmemGenericAllocationHandle
  static constexpr Handle kManagedBit = 1ULL << 63;

  struct Allocation {
    std::size_t bytes = 0;
    int device = 0;
    MemoryManager* manager = nullptr;
    unsigned long long requestedHandleTypes = 0; // as the program asked (properties report them)
    DevicePtr mappedAt = 0;                      // 0: not mapped
    // Further addresses where it is mapped at the same time: the same bytes
    // (MemoryManager::openSharedAt), its region shared from then on.
    std::vector<DevicePtr> aliases;
    bool wasMapped = false; // its bytes went with its first unmap
    int references = 1;     // cuMemCreate, cuMemRetainAllocationHandle
  };

  static bool managed(Handle handle) { return (handle & kManagedBit) != 0; }

  [[nodiscard]] Handle create(const Allocation& allocation) {
    std::lock_guard lock(mutex_);
    const Handle handle = kManagedBit | next_++;
    allocations_[handle] = allocation;
    return handle;
  }
  [[nodiscard]] std::optional<Allocation> find(Handle handle) const {
    std::lock_guard lock(mutex_);
    const auto found = allocations_.find(handle);
    if (found == allocations_.end()) return std::nullopt;
    return found->second;
  }
  // The mapped allocation at exactly `address`, with its handle.
  [[nodiscard]] std::optional<std::pair<Handle, Allocation>> mappedAt(DevicePtr address) const {
    std::lock_guard lock(mutex_);
    const auto found = mapped_.find(address);
    if (found == mapped_.end()) return std::nullopt;
    return std::pair{found->second, allocations_.at(found->second)};
  }
  // The mapped allocation that holds `address`.
  [[nodiscard]] std::optional<std::pair<Handle, Allocation>> holding(DevicePtr address) const {
    std::lock_guard lock(mutex_);
    auto found = mapped_.upper_bound(address);
    if (found == mapped_.begin()) return std::nullopt;
    --found;
    const Allocation& allocation = allocations_.at(found->second);
    if (address >= found->first + allocation.bytes) return std::nullopt;
    return std::pair{found->second, allocation};
  }
  // The mapped allocations that meet [address, address + bytes), by address.
  [[nodiscard]] std::map<DevicePtr, std::size_t> mappedIn(DevicePtr address, std::size_t bytes) const {
    std::lock_guard lock(mutex_);
    std::map<DevicePtr, std::size_t> meeting;
    auto it = mapped_.upper_bound(address);
    if (it != mapped_.begin()) --it;
    for (; it != mapped_.end() && it->first < address + bytes; ++it) {
      const std::size_t length = allocations_.at(it->second).bytes;
      if (it->first + length > address) meeting.emplace(it->first, length);
    }
    return meeting;
  }
  void mapped(Handle handle, DevicePtr address) {
    std::lock_guard lock(mutex_);
    Allocation& allocation = allocations_.at(handle);
    allocation.mappedAt = address;
    allocation.wasMapped = true;
    mapped_[address] = handle;
  }
  void unmapped(Handle handle) {
    std::lock_guard lock(mutex_);
    Allocation& allocation = allocations_.at(handle);
    mapped_.erase(allocation.mappedAt);
    allocation.mappedAt = 0;
    eraseIfUnusedLocked(handle);
  }
  void aliased(Handle handle, DevicePtr address) {
    std::lock_guard lock(mutex_);
    allocations_.at(handle).aliases.push_back(address);
    mapped_[address] = handle;
  }
  void unaliased(Handle handle, DevicePtr address) {
    std::lock_guard lock(mutex_);
    std::erase(allocations_.at(handle).aliases, address);
    mapped_.erase(address);
    eraseIfUnusedLocked(handle);
  }
  // One reference more (cuMemRetainAllocationHandle) or less (cuMemRelease).
  void retain(Handle handle) {
    std::lock_guard lock(mutex_);
    ++allocations_.at(handle).references;
  }
  void release(Handle handle) {
    std::lock_guard lock(mutex_);
    --allocations_.at(handle).references;
    eraseIfUnusedLocked(handle);
  }

private:
  // Gone once the program released every reference and it is mapped nowhere.
  void eraseIfUnusedLocked(Handle handle) {
    const Allocation& allocation = allocations_.at(handle);
    if (allocation.references <= 0 && allocation.mappedAt == 0 && allocation.aliases.empty())
      allocations_.erase(handle);
  }

  mutable std::mutex mutex_;
  Handle next_ = 1;
  std::unordered_map<Handle, Allocation> allocations_;
  std::map<DevicePtr, Handle> mapped_;
};

} // namespace mqx::hook
