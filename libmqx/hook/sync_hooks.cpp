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
  if (MemoryManager* manager = Runtime::instance().manager()) {
    guarded("poll", [&] {
      manager->poll();
      return CUDA_SUCCESS;
    });
  }
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
