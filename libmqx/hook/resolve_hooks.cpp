// Symbol resolution family: cuGetProcAddress of every version. cudart 12/13
// (static or shared) finds every driver function this way, with a CUDA
// version and per-thread-stream flags; for a hooked function the hook of the
// very ABI the driver chose is handed out instead.
#include "hook/hook_declarations.hpp"
#include "hook/hook_resolution.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

MQX_EXPORT CUresult cuGetProcAddress(const char* symbol, void** function, int cudaVersion, cuuint64_t flags) {
  CUresult result = callReal(&DriverApi::cuGetProcAddress, symbol, function, cudaVersion, flags);
  if (result == CUDA_SUCCESS && function != nullptr) {
    *function = hookForProcAddress(symbol, *function, cudaVersion, flags);
  }
  return result;
}

MQX_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** function, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* symbolStatus) {
  CUresult result = callReal(&DriverApi::cuGetProcAddress_v2, symbol, function, cudaVersion, flags, symbolStatus);
  if (result == CUDA_SUCCESS && function != nullptr) {
    *function = hookForProcAddress(symbol, *function, cudaVersion, flags);
  }
  return result;
}
