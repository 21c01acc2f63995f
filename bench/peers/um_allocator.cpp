// The Unified Memory peer (issue 14): PyTorch's CUDAPluggableAllocator over
// cuMemAllocManaged, with the device as the preferred location, as a user
// oversubscribes a GPU today without mqx. Driver API only: PyTorch brings its
// own cudart, and the driver call works on the context it made current.
//
// PyTorch calls the allocator from threads that may have no current context:
// its autograd engine runs the backward pass on a thread of its own, where
// cuMemAllocManaged answered CUDA_ERROR_INVALID_CONTEXT, the allocator
// returned null and the next kernel died with an illegal address
// (bench/results/peers-training-H100-29e177a.json). Every entry point makes
// the device's primary context current first, as cudart does.
//
// A pluggable allocator is told of a free as soon as the tensor goes, while
// kernels on its stream may still read it (PyTorch's own allocator reuses
// memory in stream order; this one has no cache): the memory is released
// only once an event recorded on that stream at the free has completed.
#include <cuda.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdio>
#include <mutex>
#include <vector>

namespace {

void report(const char* what, CUresult result) {
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "mqx_um_allocator: %s: %s\n", what, name != nullptr ? name : "unknown error");
}

struct PendingFree {
  CUdeviceptr pointer;
  CUevent done; // recorded on the freeing stream
};

std::mutex pendingMutex;
std::vector<PendingFree> pendingFrees; // under pendingMutex

// Makes `device`'s primary context current on this thread where none is.
// The context is retained once per device for the process's lifetime, as
// cudart's own primary-context use is.
bool useDevice(int device) {
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) return true;
  static std::mutex retainMutex;
  static std::vector<CUcontext> retained; // by device ordinal
  CUcontext context = nullptr;
  {
    std::lock_guard lock(retainMutex);
    if (device < 0) return false;
    if (retained.size() <= static_cast<std::size_t>(device)) retained.resize(device + 1, nullptr);
    if (retained[device] == nullptr) {
      CUdevice handle = 0;
      CUresult result = cuDeviceGet(&handle, device);
      if (result == CUDA_SUCCESS) result = cuDevicePrimaryCtxRetain(&retained[device], handle);
      if (result != CUDA_SUCCESS) {
        report("cuDevicePrimaryCtxRetain", result);
        retained[device] = nullptr;
        return false;
      }
    }
    context = retained[device];
  }
  if (const CUresult result = cuCtxSetCurrent(context); result != CUDA_SUCCESS) {
    report("cuCtxSetCurrent", result);
    return false;
  }
  return true;
}

void release(CUdeviceptr pointer) {
  if (const CUresult result = cuMemFree(pointer); result != CUDA_SUCCESS) report("cuMemFree", result);
}

// Releases the frees whose streams have passed them; all of them, waiting,
// when `wait` (an allocation that failed for want of memory).
void reap(bool wait) {
  std::lock_guard lock(pendingMutex);
  std::erase_if(pendingFrees, [wait](const PendingFree& free) {
    if (wait) cuEventSynchronize(free.done);
    if (cuEventQuery(free.done) != CUDA_SUCCESS) return false;
    release(free.pointer);
    cuEventDestroy(free.done);
    return true;
  });
}

} // namespace

extern "C" {

// The signatures CUDAPluggableAllocator calls: (size, device, stream).
void* mqx_um_malloc(ssize_t size, int device, void* /*stream*/) {
  if (!useDevice(device)) return nullptr;
  reap(false);
  CUdeviceptr pointer = 0;
  CUresult result = cuMemAllocManaged(&pointer, static_cast<size_t>(size), CU_MEM_ATTACH_GLOBAL);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    reap(true);
    result = cuMemAllocManaged(&pointer, static_cast<size_t>(size), CU_MEM_ATTACH_GLOBAL);
  }
  if (result != CUDA_SUCCESS) {
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

void mqx_um_free(void* pointer, ssize_t /*size*/, int device, void* stream) {
  useDevice(device); // without a context the calls below fail and say so
  CUevent done = nullptr;
  if (cuEventCreate(&done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
      cuEventRecord(done, static_cast<CUstream>(stream)) != CUDA_SUCCESS) {
    // No event: wait for the stream instead, then release.
    if (done != nullptr) cuEventDestroy(done);
    cuStreamSynchronize(static_cast<CUstream>(stream));
    release(reinterpret_cast<CUdeviceptr>(pointer));
    return;
  }
  {
    std::lock_guard lock(pendingMutex);
    pendingFrees.push_back({reinterpret_cast<CUdeviceptr>(pointer), done});
  }
  reap(false);
}

} // extern "C"
