// Copy family, one-dimensional copies. Host-to-device into a managed region
// is recorded lazily by the core; device-to-host from a managed region is
// served from wherever the valid data lives; device-to-device with a managed
// side goes through the core. A copy with no managed side passes through,
// after breaking copy-on-write on a host destination.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"
#include "hook/pointer_location.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

template <typename PassThrough>
CUresult hostToDevice(const char* call, CUdeviceptr destination, const void* source, std::size_t bytes, Order order,
                      PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().manager();
  if (manager == nullptr || capturing(order.stream) || !manager->isManaged(destination)) return passThrough();
  return guarded(call, [&] {
    return managedResult(call, manager->copyHostToDevice(destination, source, bytes, order.stream, order.synchronous));
  });
}

template <typename PassThrough>
CUresult deviceToHost(const char* call, void* destination, CUdeviceptr source, std::size_t bytes, Order order,
                      PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().manager();
  if (manager == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    // Both paths write host memory without faulting (DMA, or mqx's staging
    // threads): protection goes first.
    beforeHostWrite(*manager, destination, bytes);
    if (!manager->isManaged(source)) return passThrough();
    return managedResult(call, manager->copyDeviceToHost(destination, source, bytes, order.stream, order.synchronous));
  });
}

template <typename PassThrough>
CUresult deviceToDevice(const char* call, CUdeviceptr destination, CUdeviceptr source, std::size_t bytes, Order order,
                        PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().manager();
  if (manager == nullptr || capturing(order.stream) ||
      (!manager->isManaged(destination) && !manager->isManaged(source)))
    return passThrough();
  return guarded(call, [&] {
    return managedResult(call,
                         manager->copyDeviceToDevice(destination, source, bytes, order.stream, order.synchronous));
  });
}

// cuMemcpy/cuMemcpyAsync: unified addresses, the direction found here.
template <typename PassThrough>
CUresult unified(const char* call, CUdeviceptr destination, CUdeviceptr source, std::size_t bytes, Order order,
                 PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().manager();
  if (manager == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    bool managedTo = manager->isManaged(destination);
    bool managedFrom = manager->isManaged(source);
    if (!managedTo && !managedFrom) {
      // Only a host destination needs care; skip the driver query otherwise.
      if (manager->hasProtectedHostMemory() && locate(*manager, destination) == Where::Host) {
        beforeHostWrite(*manager, reinterpret_cast<void*>(destination), bytes);
      }
      return passThrough();
    }
    Status status = Status::Success;
    if (managedTo && !managedFrom && locate(*manager, source) == Where::Host) {
      status = manager->copyHostToDevice(destination, reinterpret_cast<const void*>(source), bytes, order.stream,
                                         order.synchronous);
    } else if (managedFrom && !managedTo && locate(*manager, destination) == Where::Host) {
      beforeHostWrite(*manager, reinterpret_cast<void*>(destination), bytes);
      status = manager->copyDeviceToHost(reinterpret_cast<void*>(destination), source, bytes, order.stream,
                                         order.synchronous);
    } else {
      status = manager->copyDeviceToDevice(destination, source, bytes, order.stream, order.synchronous);
    }
    return managedResult(call, status);
  });
}

} // namespace

MQX_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return unified("cuMemcpy", dst, src, bytes, blocking(false),
                 [&] { return callReal(&DriverApi::cuMemcpy, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return unified("cuMemcpy", dst, src, bytes, blocking(true),
                 [&] { return callReal(&DriverApi::cuMemcpy_ptds, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return unified("cuMemcpyAsync", dst, src, bytes, async(s, false),
                 [&] { return callReal(&DriverApi::cuMemcpyAsync, dst, src, bytes, s); });
}
MQX_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return unified("cuMemcpyAsync", dst, src, bytes, async(s, true),
                 [&] { return callReal(&DriverApi::cuMemcpyAsync_ptsz, dst, src, bytes, s); });
}

MQX_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return hostToDevice("cuMemcpyHtoD", dst, src, bytes, blocking(false),
                      [&] { return callReal(&DriverApi::cuMemcpyHtoD_v2, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t bytes) {
  return hostToDevice("cuMemcpyHtoD", dst, src, bytes, blocking(true),
                      [&] { return callReal(&DriverApi::cuMemcpyHtoD_v2_ptds, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
  return hostToDevice("cuMemcpyHtoDAsync", dst, src, bytes, async(s, false),
                      [&] { return callReal(&DriverApi::cuMemcpyHtoDAsync_v2, dst, src, bytes, s); });
}
MQX_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
  return hostToDevice("cuMemcpyHtoDAsync", dst, src, bytes, async(s, true),
                      [&] { return callReal(&DriverApi::cuMemcpyHtoDAsync_v2_ptsz, dst, src, bytes, s); });
}

MQX_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return deviceToHost("cuMemcpyDtoH", dst, src, bytes, blocking(false),
                      [&] { return callReal(&DriverApi::cuMemcpyDtoH_v2, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t bytes) {
  return deviceToHost("cuMemcpyDtoH", dst, src, bytes, blocking(true),
                      [&] { return callReal(&DriverApi::cuMemcpyDtoH_v2_ptds, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return deviceToHost("cuMemcpyDtoHAsync", dst, src, bytes, async(s, false),
                      [&] { return callReal(&DriverApi::cuMemcpyDtoHAsync_v2, dst, src, bytes, s); });
}
MQX_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return deviceToHost("cuMemcpyDtoHAsync", dst, src, bytes, async(s, true),
                      [&] { return callReal(&DriverApi::cuMemcpyDtoHAsync_v2_ptsz, dst, src, bytes, s); });
}

MQX_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return deviceToDevice("cuMemcpyDtoD", dst, src, bytes, blocking(false),
                        [&] { return callReal(&DriverApi::cuMemcpyDtoD_v2, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return deviceToDevice("cuMemcpyDtoD", dst, src, bytes, blocking(true),
                        [&] { return callReal(&DriverApi::cuMemcpyDtoD_v2_ptds, dst, src, bytes); });
}
MQX_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return deviceToDevice("cuMemcpyDtoDAsync", dst, src, bytes, async(s, false),
                        [&] { return callReal(&DriverApi::cuMemcpyDtoDAsync_v2, dst, src, bytes, s); });
}
MQX_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return deviceToDevice("cuMemcpyDtoDAsync", dst, src, bytes, async(s, true),
                        [&] { return callReal(&DriverApi::cuMemcpyDtoDAsync_v2_ptsz, dst, src, bytes, s); });
}
