// The Unified Memory peer (issue 14): PyTorch's CUDAPluggableAllocator over
// cuMemAllocManaged, with the device as the preferred location, as a user
// oversubscribes a GPU today without mqx. Driver API only: PyTorch brings its
// own cudart, and the driver call works on the context it made current.
#include <cuda.h>
#include <sys/types.h>

#include <cstdio>

namespace {

void report(const char* what, CUresult result) {
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "mqx_um_allocator: %s: %s\n", what, name != nullptr ? name : "unknown error");
}

} // namespace

extern "C" {

// The signatures CUDAPluggableAllocator calls: (size, device, stream).
void* mqx_um_malloc(ssize_t size, int device, void* /*stream*/) {
  CUdeviceptr pointer = 0;
  if (const CUresult result = cuMemAllocManaged(&pointer, static_cast<size_t>(size), CU_MEM_ATTACH_GLOBAL);
      result != CUDA_SUCCESS) {
    report("cuMemAllocManaged", result);
    return nullptr;
  }
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device;
  // Preferred location only: a failed advice costs speed, not correctness.
  if (const CUresult result =
          cuMemAdvise(pointer, static_cast<size_t>(size), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, location);
      result != CUDA_SUCCESS)
    report("cuMemAdvise", result);
  return reinterpret_cast<void*>(pointer);
}

void mqx_um_free(void* pointer, ssize_t /*size*/, int /*device*/, void* /*stream*/) {
  if (const CUresult result = cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)); result != CUDA_SUCCESS)
    report("cuMemFree", result);
}

} // extern "C"
