// Memset family. A memset of a managed region becomes a fill state in the
// core (no transfer, no device memory until a kernel needs it); pitched
// memsets become one fill per row unless the rows are contiguous. The
// blocking forms are asynchronous for device memory in the driver too, so
// every managed memset is issued with synchronous = false.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

template <typename PassThrough>
CUresult fill2D(const char* call, CUdeviceptr destination, std::size_t pitch, std::uint32_t pattern,
                unsigned elementSize, std::size_t width, std::size_t height, Order order, PassThrough passThrough) {
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr || capturing(order.stream)) return passThrough();
  MemoryManager* manager = runtime.owner(destination);
  if (manager == nullptr) return passThrough();
  // Asynchronous, unless the stream is another device's (orderFor): then
  // complete on return, as nothing on that stream can wait for it.
  const Order on = orderFor(*manager, order);
  const bool waits = on.stream != order.stream || on.synchronous != order.synchronous;
  return guarded(call, [&] {
    std::size_t rowBytes = width * elementSize;
    if (height <= 1 || pitch == rowBytes) {
      return managedResult(call, manager->memset(destination, pattern, elementSize, width * height, on.stream, waits));
    }
    if (pitch < rowBytes) return CUDA_ERROR_INVALID_VALUE;
    for (std::size_t row = 0; row < height; ++row) {
      Status status = manager->memset(destination + row * pitch, pattern, elementSize, width, on.stream, waits);
      if (!ok(status)) return managedResult(call, status);
    }
    return CUDA_SUCCESS;
  });
}

template <typename PassThrough>
CUresult fill(const char* call, CUdeviceptr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
              Order order, PassThrough passThrough) {
  return fill2D(call, destination, count * elementSize, pattern, elementSize, count, 1, order, passThrough);
}

} // namespace

// Linear memsets.
MQX_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  return fill("cuMemsetD8", d, v, 1, n, blocking(false), [&] { return callReal(&DriverApi::cuMemsetD8_v2, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  return fill("cuMemsetD8", d, v, 1, n, blocking(true),
              [&] { return callReal(&DriverApi::cuMemsetD8_v2_ptds, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  return fill("cuMemsetD16", d, v, 2, n, blocking(false),
              [&] { return callReal(&DriverApi::cuMemsetD16_v2, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) {
  return fill("cuMemsetD16", d, v, 2, n, blocking(true),
              [&] { return callReal(&DriverApi::cuMemsetD16_v2_ptds, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  return fill("cuMemsetD32", d, v, 4, n, blocking(false),
              [&] { return callReal(&DriverApi::cuMemsetD32_v2, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
  return fill("cuMemsetD32", d, v, 4, n, blocking(true),
              [&] { return callReal(&DriverApi::cuMemsetD32_v2_ptds, d, v, n); });
}
MQX_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return fill("cuMemsetD8Async", d, v, 1, n, async(s, false),
              [&] { return callReal(&DriverApi::cuMemsetD8Async, d, v, n, s); });
}
MQX_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return fill("cuMemsetD8Async", d, v, 1, n, async(s, true),
              [&] { return callReal(&DriverApi::cuMemsetD8Async_ptsz, d, v, n, s); });
}
MQX_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  return fill("cuMemsetD16Async", d, v, 2, n, async(s, false),
              [&] { return callReal(&DriverApi::cuMemsetD16Async, d, v, n, s); });
}
MQX_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  return fill("cuMemsetD16Async", d, v, 2, n, async(s, true),
              [&] { return callReal(&DriverApi::cuMemsetD16Async_ptsz, d, v, n, s); });
}
MQX_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return fill("cuMemsetD32Async", d, v, 4, n, async(s, false),
              [&] { return callReal(&DriverApi::cuMemsetD32Async, d, v, n, s); });
}
MQX_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return fill("cuMemsetD32Async", d, v, 4, n, async(s, true),
              [&] { return callReal(&DriverApi::cuMemsetD32Async_ptsz, d, v, n, s); });
}

// Pitched memsets: `w` elements per row, `h` rows, `p` bytes between rows.
MQX_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D8", d, p, v, 1, w, h, blocking(false),
                [&] { return callReal(&DriverApi::cuMemsetD2D8_v2, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D8", d, p, v, 1, w, h, blocking(true),
                [&] { return callReal(&DriverApi::cuMemsetD2D8_v2_ptds, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D16", d, p, v, 2, w, h, blocking(false),
                [&] { return callReal(&DriverApi::cuMemsetD2D16_v2, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D16", d, p, v, 2, w, h, blocking(true),
                [&] { return callReal(&DriverApi::cuMemsetD2D16_v2_ptds, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D32", d, p, v, 4, w, h, blocking(false),
                [&] { return callReal(&DriverApi::cuMemsetD2D32_v2, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h) {
  return fill2D("cuMemsetD2D32", d, p, v, 4, w, h, blocking(true),
                [&] { return callReal(&DriverApi::cuMemsetD2D32_v2_ptds, d, p, v, w, h); });
}
MQX_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D8Async", d, p, v, 1, w, h, async(s, false),
                [&] { return callReal(&DriverApi::cuMemsetD2D8Async, d, p, v, w, h, s); });
}
MQX_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D8Async", d, p, v, 1, w, h, async(s, true),
                [&] { return callReal(&DriverApi::cuMemsetD2D8Async_ptsz, d, p, v, w, h, s); });
}
MQX_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D16Async", d, p, v, 2, w, h, async(s, false),
                [&] { return callReal(&DriverApi::cuMemsetD2D16Async, d, p, v, w, h, s); });
}
MQX_EXPORT CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D16Async", d, p, v, 2, w, h, async(s, true),
                [&] { return callReal(&DriverApi::cuMemsetD2D16Async_ptsz, d, p, v, w, h, s); });
}
MQX_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D32Async", d, p, v, 4, w, h, async(s, false),
                [&] { return callReal(&DriverApi::cuMemsetD2D32Async, d, p, v, w, h, s); });
}
MQX_EXPORT CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s) {
  return fill2D("cuMemsetD2D32Async", d, p, v, 4, w, h, async(s, true),
                [&] { return callReal(&DriverApi::cuMemsetD2D32Async_ptsz, d, p, v, w, h, s); });
}
