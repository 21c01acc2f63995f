// Copy family, 2D and 3D copies. With a managed side they become linear
// copies through the core, one per contiguous run (CopyShape); arrays with a
// managed side are refused (CUDA_ERROR_NOT_SUPPORTED). Without one they pass
// through, after breaking copy-on-write on a host destination.
#include "hook/copy_shape.hpp"
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"
#include "hook/pointer_location.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

struct Endpoint {
  CopySide side;
  Where where = Where::Host;
  bool array = false;
  MemoryManager* manager = nullptr; // Where::Managed: the manager of its device
};

Endpoint endpoint(CUmemorytype type, const void* host, CUdeviceptr device, CopySide side, std::size_t width,
                  std::size_t height) {
  Endpoint result;
  result.side = side;
  switch (type) {
  case CU_MEMORYTYPE_HOST: result.side.base = reinterpret_cast<std::uintptr_t>(host); break;
  case CU_MEMORYTYPE_DEVICE:
  case CU_MEMORYTYPE_UNIFIED: result.side.base = device; break;
  default: result.array = true; return result;
  }
  CUdeviceptr first = result.side.address(0, 0, width, height);
  if (type == CU_MEMORYTYPE_HOST) return result;
  result.manager = Runtime::instance().owner(first);
  if (result.manager != nullptr) {
    result.where = Where::Managed;
  } else {
    result.where = type == CU_MEMORYTYPE_DEVICE ? Where::Device : locate(first);
  }
  return result;
}

template <typename PassThrough>
CUresult pitchedCopy(const char* call, const CopyShape& shape, const Endpoint& from, const Endpoint& to, Order order,
                     PassThrough passThrough) {
  if (from.where != Where::Managed && to.where != Where::Managed) {
    if (!to.array && to.where == Where::Host) {
      beforeHostWrite(reinterpret_cast<void*>(shape.destination.address(0, 0, shape.width, shape.height)),
                      shape.extent(shape.destination));
    }
    return passThrough();
  }
  if (from.array || to.array) {
    log(LogLevel::Warn,
        "{}: copies between CUDA arrays and mqx-managed memory are not "
        "supported",
        call);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  // Two devices' managers: each run crosses through both, after the
  // application's stream (DeviceManagers::copyBetween).
  const bool between = from.manager != nullptr && to.manager != nullptr && from.manager != to.manager;
  if (between) {
    if (CUresult waited = waitForStream(order); waited != CUDA_SUCCESS) return waited;
  }
  MemoryManager& manager = to.manager != nullptr ? *to.manager : *from.manager;
  const Order on = between ? order : orderFor(manager, order);
  return shape.forEachRun([&](std::uintptr_t source, std::uintptr_t destination, std::size_t bytes) -> CUresult {
    Status status = Status::Success;
    if (between) {
      status = DeviceManagers::copyBetween(*to.manager, destination, *from.manager, source, bytes);
    } else if (to.where == Where::Managed && from.where == Where::Host) {
      status = manager.copyHostToDevice(destination, reinterpret_cast<const void*>(source), bytes, on.stream,
                                        on.synchronous);
    } else if (from.where == Where::Managed && to.where == Where::Host) {
      beforeHostWrite(reinterpret_cast<void*>(destination), bytes);
      status = manager.copyDeviceToHost(reinterpret_cast<void*>(destination), source, bytes, on.stream, on.synchronous);
    } else {
      status = manager.copyDeviceToDevice(destination, source, bytes, on.stream, on.synchronous);
    }
    return managedResult(call, status);
  });
}

// A copy's extent and both sides' offsets and pitches; endpoint() adds the
// bases, which depend on each side's memory type.
CopyShape shapeOf(const CUDA_MEMCPY2D& copy) {
  CopyShape shape;
  shape.width = copy.WidthInBytes;
  shape.height = copy.Height;
  shape.source = {0, copy.srcXInBytes, copy.srcY, 0, copy.srcPitch, 0};
  shape.destination = {0, copy.dstXInBytes, copy.dstY, 0, copy.dstPitch, 0};
  return shape;
}

CopyShape shapeOf(const CUDA_MEMCPY3D& copy) {
  CopyShape shape;
  shape.width = copy.WidthInBytes;
  shape.height = copy.Height;
  shape.depth = copy.Depth;
  shape.source = {0, copy.srcXInBytes, copy.srcY, copy.srcZ, copy.srcPitch, copy.srcHeight};
  shape.destination = {0, copy.dstXInBytes, copy.dstY, copy.dstZ, copy.dstPitch, copy.dstHeight};
  return shape;
}

// cuMemcpy2D* and cuMemcpy3D*: `Descriptor` is CUDA_MEMCPY2D or CUDA_MEMCPY3D.
template <typename Descriptor, typename PassThrough>
CUresult copyPitched(const char* call, const Descriptor* copy, Order order, PassThrough passThrough) {
  if (Runtime::instance().hostManager() == nullptr || capturing(order.stream) || copy == nullptr) return passThrough();
  return guarded(call, [&] {
    CopyShape shape = shapeOf(*copy);
    Endpoint from =
        endpoint(copy->srcMemoryType, copy->srcHost, copy->srcDevice, shape.source, shape.width, shape.height);
    Endpoint to =
        endpoint(copy->dstMemoryType, copy->dstHost, copy->dstDevice, shape.destination, shape.width, shape.height);
    shape.source = from.side;
    shape.destination = to.side;
    return pitchedCopy(call, shape, from, to, order, passThrough);
  });
}

} // namespace

MQX_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* copy) {
  return copyPitched("cuMemcpy2D", copy, blocking(false), [&] { return callReal(&DriverApi::cuMemcpy2D_v2, copy); });
}
MQX_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* copy) {
  return copyPitched("cuMemcpy2D", copy, blocking(true),
                     [&] { return callReal(&DriverApi::cuMemcpy2D_v2_ptds, copy); });
}
MQX_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* copy) {
  return copyPitched("cuMemcpy2DUnaligned", copy, blocking(false),
                     [&] { return callReal(&DriverApi::cuMemcpy2DUnaligned_v2, copy); });
}
MQX_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* copy) {
  return copyPitched("cuMemcpy2DUnaligned", copy, blocking(true),
                     [&] { return callReal(&DriverApi::cuMemcpy2DUnaligned_v2_ptds, copy); });
}
MQX_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* copy, CUstream s) {
  return copyPitched("cuMemcpy2DAsync", copy, async(s, false),
                     [&] { return callReal(&DriverApi::cuMemcpy2DAsync_v2, copy, s); });
}
MQX_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* copy, CUstream s) {
  return copyPitched("cuMemcpy2DAsync", copy, async(s, true),
                     [&] { return callReal(&DriverApi::cuMemcpy2DAsync_v2_ptsz, copy, s); });
}
MQX_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* copy) {
  return copyPitched("cuMemcpy3D", copy, blocking(false), [&] { return callReal(&DriverApi::cuMemcpy3D_v2, copy); });
}
MQX_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* copy) {
  return copyPitched("cuMemcpy3D", copy, blocking(true),
                     [&] { return callReal(&DriverApi::cuMemcpy3D_v2_ptds, copy); });
}
MQX_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* copy, CUstream s) {
  return copyPitched("cuMemcpy3DAsync", copy, async(s, false),
                     [&] { return callReal(&DriverApi::cuMemcpy3DAsync_v2, copy, s); });
}
MQX_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* copy, CUstream s) {
  return copyPitched("cuMemcpy3DAsync", copy, async(s, true),
                     [&] { return callReal(&DriverApi::cuMemcpy3DAsync_v2_ptsz, copy, s); });
}
