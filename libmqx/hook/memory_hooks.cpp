// Memory family: cuMemAlloc and friends give managed regions (stable virtual
// addresses, backed lazily); cuMemFree of a managed address frees it.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

// cudaMallocPitch hands out rows aligned this way on every current GPU.
constexpr std::size_t kPitchAlignment = 512;

template <typename PassThrough>
CUresult allocate(const char* call, CUdeviceptr* address, std::size_t bytes, PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().activate();
  if (manager == nullptr) {
    if (CUresult refused = refusal()) return refused;
    return passThrough();
  }
  if (address == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return guarded(call, [&] {
    DevicePtr base = 0;
    Status status = manager->allocate(bytes, &base);
    if (ok(status)) *address = base;
    return managedResult(call, status);
  });
}

// Stream-ordered allocation inside a stream capture is a graph memory node:
// its address exists only while the graph runs, so it passes through.
bool capturingOn(CUstream stream, bool perThread) { return capturing(streamOf(stream, perThread)); }

// Pinned host memory the driver frees (cuMemFreeHost, cuMemHostUnregister)
// may be the source of a lazy copy: its pending bytes are saved first, as
// for free() and munmap() (the segfault of cuda-samples' simpleMultiCopy).
template <typename PassThrough> CUresult releaseHost(void* pointer, PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().hostManager();
  if (manager == nullptr || pointer == nullptr || !manager->hasProtectedHostMemory()) return passThrough();
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (callReal(&DriverApi::cuMemGetAddressRange_v2, &base, &bytes, reinterpret_cast<CUdeviceptr>(pointer)) !=
      CUDA_SUCCESS)
    bytes = 1; // unknown size: at least the protection that starts here
  guarded("cuMemFreeHost", [&] {
    manager->onHostRelease(pointer, bytes);
    return CUDA_SUCCESS;
  });
  return passThrough();
}

template <typename PassThrough> CUresult release(const char* call, CUdeviceptr address, PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  MemoryManager* manager = runtime.hostManager() != nullptr ? runtime.owner(address) : nullptr;
  if (manager == nullptr) return passThrough();
  runtime.memoryExports().withdraw(address); // a handle of it serves nobody from now
  return guarded(call, [&] { return managedResult(call, manager->free(address)); });
}

} // namespace

MQX_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* address, size_t bytes) {
  return allocate("cuMemAlloc", address, bytes, [&] { return callReal(&DriverApi::cuMemAlloc_v2, address, bytes); });
}

MQX_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* address, size_t* pitch, size_t width, size_t height,
                                       unsigned elementSize) {
  auto passThrough = [&] {
    return callReal(&DriverApi::cuMemAllocPitch_v2, address, pitch, width, height, elementSize);
  };
  // The driver's own checks: element size 4, 8 or 16, a non-empty area.
  bool valid =
      pitch != nullptr && width != 0 && height != 0 && (elementSize == 4 || elementSize == 8 || elementSize == 16);
  std::size_t rowBytes = roundUp(width, kPitchAlignment);
  CUresult result = allocate("cuMemAllocPitch", address, valid ? rowBytes * height : 0, passThrough);
  if (result == CUDA_SUCCESS && Runtime::instance().owner(*address) != nullptr) *pitch = rowBytes;
  return result;
}

MQX_EXPORT CUresult cuMemFree_v2(CUdeviceptr address) {
  return release("cuMemFree", address, [&] { return callReal(&DriverApi::cuMemFree_v2, address); });
}

// Stream-ordered allocation: a managed region is usable at once, which is
// stronger than "usable by work ordered after this call". The free waits
// for the region's in-flight launches inside the core.
MQX_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* address, size_t bytes, CUstream stream) {
  if (capturingOn(stream, false)) return callReal(&DriverApi::cuMemAllocAsync, address, bytes, stream);
  return allocate("cuMemAllocAsync", address, bytes,
                  [&] { return callReal(&DriverApi::cuMemAllocAsync, address, bytes, stream); });
}

MQX_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* address, size_t bytes, CUstream stream) {
  if (capturingOn(stream, true)) return callReal(&DriverApi::cuMemAllocAsync_ptsz, address, bytes, stream);
  return allocate("cuMemAllocAsync", address, bytes,
                  [&] { return callReal(&DriverApi::cuMemAllocAsync_ptsz, address, bytes, stream); });
}

MQX_EXPORT CUresult cuMemFreeAsync(CUdeviceptr address, CUstream stream) {
  return release("cuMemFreeAsync", address, [&] { return callReal(&DriverApi::cuMemFreeAsync, address, stream); });
}

MQX_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr address, CUstream stream) {
  return release("cuMemFreeAsync", address, [&] { return callReal(&DriverApi::cuMemFreeAsync_ptsz, address, stream); });
}

MQX_EXPORT CUresult cuMemFreeHost(void* pointer) {
  return releaseHost(pointer, [&] { return callReal(&DriverApi::cuMemFreeHost, pointer); });
}

MQX_EXPORT CUresult cuMemHostUnregister(void* pointer) {
  return releaseHost(pointer, [&] { return callReal(&DriverApi::cuMemHostUnregister, pointer); });
}
