// Memory family, the program's own memory pools (cuMemPoolCreate,
// cuMemAllocFromPoolAsync): RMM's async resource, CuPy's MemoryAsyncPool.
// An allocation from a device pool that no other process can import is a
// managed region of the pool's device, as cuMemAllocAsync's (memory_pools.hpp
// says which pools); cuMemFreeAsync frees it. The pool's own settings (its
// release threshold, trimming) then have nothing to act on: mqx's budget is
// what bounds the memory. Other pools keep the driver's allocations, and the
// first allocation from each says so in one line.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

// The calling context's device, or -1.
int currentDevice() {
  CUdevice device = -1;
  return callReal(&DriverApi::cuCtxGetDevice, &device) == CUDA_SUCCESS ? static_cast<int>(device) : -1;
}

template <typename PassThrough, typename Managed>
CUresult allocateFromPool(CUmemoryPool pool, CUstream stream, bool perThread, PassThrough passThrough,
                          Managed managed) {
  // Inside a stream capture it is a graph memory node (as cuMemAllocAsync's).
  if (capturing(streamOf(stream, perThread))) return passThrough();
  Runtime& runtime = Runtime::instance();
  if (runtime.activate() == nullptr) {
    if (CUresult refused = refusal()) return refused;
    return passThrough(); // nothing managed: the pool serves as it would
  }
  MemoryPools::Served served = runtime.pools().servedBy(pool);
  if (served.managed && served.device >= 0 && served.device != currentDevice()) {
    // The manager serves the calling context's device (Runtime::activate).
    served = {false, served.device, "the pool is of another device than the calling context's"};
  }
  if (!served.managed) {
    if (runtime.pools().firstUnmanagedUse(pool))
      log(LogLevel::Info,
          "cuMemAllocFromPoolAsync: allocations from pool {} are the driver's, not managed by mqx (not counted in the "
          "budget, never paged): {}",
          static_cast<const void*>(pool), served.reason);
    return passThrough();
  }
  return managed();
}

} // namespace

MQX_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* properties) {
  const CUresult result = callReal(&DriverApi::cuMemPoolCreate, pool, properties);
  if (result == CUDA_SUCCESS && pool != nullptr && properties != nullptr)
    guarded("cuMemPoolCreate", [&] {
      Runtime::instance().pools().created(*pool, *properties);
      return CUDA_SUCCESS;
    });
  return result;
}

MQX_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  guarded("cuMemPoolDestroy", [&] {
    Runtime::instance().pools().destroyed(pool);
    return CUDA_SUCCESS;
  });
  return callReal(&DriverApi::cuMemPoolDestroy, pool);
}

MQX_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t bytes, CUmemoryPool pool, CUstream stream) {
  return allocateFromPool(
      pool, stream, false, [&] { return callReal(&DriverApi::cuMemAllocFromPoolAsync, address, bytes, pool, stream); },
      [&] { return cuMemAllocAsync(address, bytes, stream); });
}

MQX_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* address, size_t bytes, CUmemoryPool pool,
                                                 CUstream stream) {
  return allocateFromPool(
      pool, stream, true,
      [&] { return callReal(&DriverApi::cuMemAllocFromPoolAsync_ptsz, address, bytes, pool, stream); },
      [&] { return cuMemAllocAsync_ptsz(address, bytes, stream); });
}
