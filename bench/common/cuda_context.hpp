// The CUDA driver set up as the runtime does at a program's first call:
// shared by the benchmarks that use the driver API directly.
#pragma once

#include <cuda.h>

namespace mqx::bench {

// Initialises the driver and makes device `ordinal`'s primary context (the
// one the CUDA runtime and libraries such as PyTorch use) current on this
// thread. `check(result, call)` reports a failed call and does not return:
// each benchmark reports failures in its own format.
template <typename Check> CUdevice usePrimaryContext(int ordinal, Check&& check) {
  check(cuInit(0), "cuInit(0)");
  CUdevice device = 0;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return device;
}

} // namespace mqx::bench
