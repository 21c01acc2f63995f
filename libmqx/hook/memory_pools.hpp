// The memory pools a program created (cuMemPoolCreate), and whether mqx
// manages their allocations (pool_hooks.cpp). A pool of device memory that
// no other process can import serves managed regions of its device: its
// allocations are counted, paged and oversubscribed like cuMemAllocAsync's.
// A pool the program may export (a shareable handle type) or one of host
// memory keeps the driver's allocations: another process maps them by the
// pool's handle, which a managed region (many physical allocations) cannot
// give. Pools mqx never saw created (a device's default pool, or one set as
// current) are device pools.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "device/cuda/cuda_headers.hpp"

namespace mqx::hook {

class MemoryPools {
public:
  // How a pool's allocations are served.
  struct Served {
    bool managed = true;
    int device = -1;    // managed: the pool's device (-1: the calling context's)
    std::string reason; // not managed: why, for the one line that says so
  };

  void created(CUmemoryPool pool, const CUmemPoolProps& properties) {
    Served served;
    if (properties.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      served = {false, -1, "its memory is not device memory"};
    } else if (properties.handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
      served = {false, properties.location.id, "other processes may import it (a shareable handle type)"};
    } else {
      served.device = properties.location.id;
    }
    std::lock_guard lock(mutex_);
    pools_[pool] = served;
  }
  void destroyed(CUmemoryPool pool) {
    std::lock_guard lock(mutex_);
    pools_.erase(pool);
  }
  [[nodiscard]] Served servedBy(CUmemoryPool pool) const {
    std::lock_guard lock(mutex_);
    const auto found = pools_.find(pool);
    return found != pools_.end() ? found->second : Served{};
  }
  // True the first time a pool that is not managed is used (it is said once).
  [[nodiscard]] bool firstUnmanagedUse(CUmemoryPool pool) {
    std::lock_guard lock(mutex_);
    return saidUnmanaged_.emplace(pool, true).second;
  }

private:
  mutable std::mutex mutex_;
  std::unordered_map<CUmemoryPool, Served> pools_;
  std::unordered_map<CUmemoryPool, bool> saidUnmanaged_;
};

} // namespace mqx::hook
