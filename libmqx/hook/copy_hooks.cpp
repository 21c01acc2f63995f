// Copy family, one-dimensional copies. Host-to-device into a managed region
// is recorded lazily by the core; device-to-host from a managed region is
// served from wherever the valid data lives; device-to-device with a managed
// side goes through the core, and so do peer copies (cuMemcpyPeer*); a copy
// between two devices' managed allocations goes through both managers
// (docs/interposer.md, "Several devices"). A copy with no managed side
// passes through, after breaking copy-on-write on a host destination.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"
#include "hook/pointer_location.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

template <typename PassThrough>
CUresult hostToDevice(const char* call, CUdeviceptr destination, const void* source, std::size_t bytes, Order order,
                      PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    MemoryManager* manager = runtime.owner(destination);
    if (manager == nullptr) return passThrough();
    const Order on = orderFor(*manager, order);
    return managedResult(call, manager->copyHostToDevice(destination, source, bytes, on.stream, on.synchronous));
  });
}

template <typename PassThrough>
CUresult deviceToHost(const char* call, void* destination, CUdeviceptr source, std::size_t bytes, Order order,
                      PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    // Both paths write host memory without faulting (DMA, or mqx's staging
    // threads): protection goes first.
    beforeHostWrite(destination, bytes);
    MemoryManager* manager = runtime.owner(source);
    if (manager == nullptr) return passThrough();
    const Order on = orderFor(*manager, order);
    return managedResult(call, manager->copyDeviceToHost(destination, source, bytes, on.stream, on.synchronous));
  });
}

// Device to device, either side managed by any device's manager. Two sides
// of two devices' managers each keep their own coherence
// (DeviceManagers::copyBetween), after the application's stream.
CUresult managedDeviceToDevice(const char* call, MemoryManager* to, CUdeviceptr destination, MemoryManager* from,
                               CUdeviceptr source, std::size_t bytes, Order order) {
  if (to != nullptr && from != nullptr && to != from) {
    if (CUresult waited = waitForStream(order); waited != CUDA_SUCCESS) return waited;
    return managedResult(call, DeviceManagers::copyBetween(*to, destination, *from, source, bytes));
  }
  MemoryManager& manager = to != nullptr ? *to : *from;
  const Order on = orderFor(manager, order);
  return managedResult(call, manager.copyDeviceToDevice(destination, source, bytes, on.stream, on.synchronous));
}

template <typename PassThrough>
CUresult deviceToDevice(const char* call, CUdeviceptr destination, CUdeviceptr source, std::size_t bytes, Order order,
                        PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    MemoryManager* to = runtime.owner(destination);
    MemoryManager* from = runtime.owner(source);
    if (to == nullptr && from == nullptr) return passThrough();
    return managedDeviceToDevice(call, to, destination, from, source, bytes, order);
  });
}

// cuMemcpy/cuMemcpyAsync: unified addresses, the direction found here.
template <typename PassThrough>
CUresult unified(const char* call, CUdeviceptr destination, CUdeviceptr source, std::size_t bytes, Order order,
                 PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  MemoryManager* hostManager = runtime.hostManager();
  if (hostManager == nullptr || capturing(order.stream)) return passThrough();
  return guarded(call, [&] {
    MemoryManager* to = runtime.owner(destination);
    MemoryManager* from = runtime.owner(source);
    if (to == nullptr && from == nullptr) {
      // Only a host destination needs care; skip the driver query otherwise.
      if (hostManager->hasProtectedHostMemory() && locate(destination) == Where::Host) {
        beforeHostWrite(reinterpret_cast<void*>(destination), bytes);
      }
      return passThrough();
    }
    if (to != nullptr && from == nullptr && locate(source) == Where::Host) {
      const Order on = orderFor(*to, order);
      return managedResult(call, to->copyHostToDevice(destination, reinterpret_cast<const void*>(source), bytes,
                                                      on.stream, on.synchronous));
    }
    if (from != nullptr && to == nullptr && locate(destination) == Where::Host) {
      beforeHostWrite(reinterpret_cast<void*>(destination), bytes);
      const Order on = orderFor(*from, order);
      return managedResult(
          call, from->copyDeviceToHost(reinterpret_cast<void*>(destination), source, bytes, on.stream, on.synchronous));
    }
    return managedDeviceToDevice(call, to, destination, from, source, bytes, order);
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

// cuMemcpyPeer*: device-to-device copies; the contexts only say which
// devices the addresses are on, which unified addressing says as well.
MQX_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                                 size_t bytes) {
  return deviceToDevice("cuMemcpyPeer", dst, src, bytes, blocking(false),
                        [&] { return callReal(&DriverApi::cuMemcpyPeer, dst, dstContext, src, srcContext, bytes); });
}
MQX_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                                      size_t bytes) {
  return deviceToDevice("cuMemcpyPeer", dst, src, bytes, blocking(true), [&] {
    return callReal(&DriverApi::cuMemcpyPeer_ptds, dst, dstContext, src, srcContext, bytes);
  });
}
MQX_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                                      size_t bytes, CUstream s) {
  return deviceToDevice("cuMemcpyPeerAsync", dst, src, bytes, async(s, false), [&] {
    return callReal(&DriverApi::cuMemcpyPeerAsync, dst, dstContext, src, srcContext, bytes, s);
  });
}
MQX_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                                           size_t bytes, CUstream s) {
  return deviceToDevice("cuMemcpyPeerAsync", dst, src, bytes, async(s, true), [&] {
    return callReal(&DriverApi::cuMemcpyPeerAsync_ptsz, dst, dstContext, src, srcContext, bytes, s);
  });
}
