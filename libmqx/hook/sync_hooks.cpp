// Streams and synchronisation family: the application's wait passes through
// unchanged; once it returns, work that completed may unpin pages, so the
// core polls its fences.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

CUresult thenPoll(CUresult result) noexcept {
  if (result != CUDA_SUCCESS) return result;
  Runtime::instance().managers().forEach([](int, MemoryManager& manager) {
    guarded("poll", [&] {
      manager.poll();
      return CUDA_SUCCESS;
    });
  });
  return result;
}

} // namespace

MQX_EXPORT CUresult cuCtxSynchronize() { return thenPoll(callReal(&DriverApi::cuCtxSynchronize)); }

MQX_EXPORT CUresult cuCtxSynchronize_v2(CUcontext context) {
  return thenPoll(callReal(&DriverApi::cuCtxSynchronize_v2, context));
}

MQX_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  return thenPoll(callReal(&DriverApi::cuStreamSynchronize, stream));
}

MQX_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) {
  return thenPoll(callReal(&DriverApi::cuStreamSynchronize_ptsz, stream));
}

MQX_EXPORT CUresult cuEventSynchronize(CUevent event) {
  return thenPoll(callReal(&DriverApi::cuEventSynchronize, event));
}

// A stream the application destroys may hold fences mqx enqueued (a launch
// or a graph's completion); they are written before it goes, and the backend
// never uses its handle again (cuda-samples' graphMemoryNodes crashed in a
// later fence wait on its destroyed stream).
MQX_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  if (stream != nullptr) {
    const Runtime& runtime = Runtime::instance();
    runtime.managers().forEach([&](int ordinal, MemoryManager& manager) {
      manager.streamDestroyed(reinterpret_cast<StreamHandle>(stream));
      if (device::DeviceBackend* backend = runtime.device(ordinal).backend)
        backend->streamDestroyed(reinterpret_cast<StreamHandle>(stream));
    });
  }
  return callReal(&DriverApi::cuStreamDestroy_v2, stream);
}
