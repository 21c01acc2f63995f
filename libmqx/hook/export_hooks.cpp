// Memory family, handles that give a managed allocation to another process
// or device: cuIpcGetMemHandle (torch.multiprocessing's CUDA tensors, NCCL's
// and vLLM's buffers) and cuMemGetHandleForAddressRange (dma-buf). A managed
// region is many physical allocations that change as its pages are loaded
// and evicted, so neither can be given honestly: the importer would keep the
// pages of one moment and read stale bytes after the next eviction. Both are
// refused with CUDA_ERROR_NOT_SUPPORTED and a line that says why, never
// passed through (docs/interposer.md, "Handles to other processes").
// Unmanaged memory passes through.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

bool managed(CUdeviceptr address) {
  Runtime& runtime = Runtime::instance();
  return runtime.hostManager() != nullptr && runtime.owner(address) != nullptr;
}

CUresult refuseExport(const char* call, CUdeviceptr address) {
  log(LogLevel::Error,
      "{}: 0x{:x} is memory mqx manages (paged: its physical memory changes as pages move), which cannot be shared "
      "with another process or device; refused with CUDA_ERROR_NOT_SUPPORTED (docs/interposer.md, \"Handles to other "
      "processes\")",
      call, address);
  return CUDA_ERROR_NOT_SUPPORTED;
}

} // namespace

MQX_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr address) {
  if (managed(address)) return refuseExport("cuIpcGetMemHandle", address);
  return callReal(&DriverApi::cuIpcGetMemHandle, handle, address);
}

MQX_EXPORT CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr address, size_t bytes,
                                                  CUmemRangeHandleType type, unsigned long long flags) {
  if (managed(address)) return refuseExport("cuMemGetHandleForAddressRange", address);
  return callReal(&DriverApi::cuMemGetHandleForAddressRange, handle, address, bytes, type, flags);
}
