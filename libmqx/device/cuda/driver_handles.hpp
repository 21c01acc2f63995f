// RAII owners of driver handles: streams, events, pinned host memory and
// physical allocations. Each releases its handle exactly once, in the
// destructor; none is copyable, all are movable. Release errors are ignored on
// purpose: a destructor has nobody to report to, and the process may be
// tearing the context down already.
#pragma once

#include <cstddef>
#include <utility>

#include "device/cuda/driver_api.hpp"

namespace mqx::device::cuda {

// A handle plus the function that releases it.
template <typename Handle, typename Releaser> class UniqueHandle {
public:
  UniqueHandle() = default;
  UniqueHandle(Handle handle, Releaser releaser) : handle_(handle), releaser_(releaser) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& other) noexcept
      : handle_(std::exchange(other.handle_, Handle{})), releaser_(other.releaser_) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
      releaser_ = other.releaser_;
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != Handle{}; }
  // Gives up ownership without releasing.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  void reset() noexcept {
    if (handle_ != Handle{}) releaser_(std::exchange(handle_, Handle{}));
  }

private:
  Handle handle_{};
  Releaser releaser_{};
};

struct StreamReleaser {
  PFN_cuStreamDestroy_v4000 destroy = nullptr;
  void operator()(CUstream stream) const noexcept { destroy(stream); }
};
struct EventReleaser {
  PFN_cuEventDestroy_v4000 destroy = nullptr;
  void operator()(CUevent event) const noexcept { destroy(event); }
};
struct HostMemoryReleaser {
  PFN_cuMemFreeHost_v2000 free = nullptr;
  void operator()(void* pointer) const noexcept { free(pointer); }
};
struct PhysicalMemoryReleaser {
  PFN_cuMemRelease_v10020 release = nullptr;
  void operator()(CUmemGenericAllocationHandle handle) const noexcept { release(handle); }
};

using Stream = UniqueHandle<CUstream, StreamReleaser>;
using Event = UniqueHandle<CUevent, EventReleaser>;
using PinnedHostMemory = UniqueHandle<void*, HostMemoryReleaser>;
using PhysicalMemory = UniqueHandle<CUmemGenericAllocationHandle, PhysicalMemoryReleaser>;

// Factories: the driver call, then ownership. They return the CUresult.
inline CUresult createStream(const DriverApi& api, unsigned flags, Stream* out) {
  CUstream stream = nullptr;
  CUresult result = api.cuStreamCreate(&stream, flags);
  if (result == CUDA_SUCCESS) *out = Stream(stream, StreamReleaser{api.cuStreamDestroy_v2});
  return result;
}

inline CUresult createEvent(const DriverApi& api, unsigned flags, Event* out) {
  CUevent event = nullptr;
  CUresult result = api.cuEventCreate(&event, flags);
  if (result == CUDA_SUCCESS) *out = Event(event, EventReleaser{api.cuEventDestroy_v2});
  return result;
}

inline CUresult allocatePinned(const DriverApi& api, std::size_t bytes, unsigned flags, PinnedHostMemory* out) {
  void* pointer = nullptr;
  CUresult result = api.cuMemHostAlloc(&pointer, bytes, flags);
  if (result == CUDA_SUCCESS) *out = PinnedHostMemory(pointer, HostMemoryReleaser{api.cuMemFreeHost});
  return result;
}

inline CUresult createPhysical(const DriverApi& api, std::size_t bytes, const CUmemAllocationProp& prop,
                               PhysicalMemory* out) {
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = api.cuMemCreate(&handle, bytes, &prop, 0);
  if (result == CUDA_SUCCESS) *out = PhysicalMemory(handle, PhysicalMemoryReleaser{api.cuMemRelease});
  return result;
}

} // namespace mqx::device::cuda
