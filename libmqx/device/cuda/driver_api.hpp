// DriverApi: the real driver's entry points, looked up in libcuda.so.1 by
// their exported names through the C library's dlsym. Everything in mqx that
// calls the driver (the CUDA backend, and hooks passing a call through) goes
// through this table, so it can never call one of libmqx's own hooks.
#pragma once

#include <string>
#include <string_view>

#include "device/cuda/cuda_headers.hpp"

namespace mqx::device::cuda {

struct DriverApi {
#define MQX_CU_FN(name, type, need) type name = nullptr;
#include "device/cuda/driver_functions.inc"
#undef MQX_CU_FN

  // The dlopen handle of libcuda.so.1 (kept open for the process' lifetime).
  void* library = nullptr;

  // Opens libcuda.so.1 and fills `api` with every entry point it has. False,
  // with the reason in `error`, when the library cannot be opened.
  static bool load(DriverApi& api, std::string& error);

  // Whether every Required entry point is there (the CUDA backend needs them;
  // passing calls through needs only the called one). Names the missing.
  bool complete(std::string& missing) const;

  // The real address of an exported driver symbol, or nullptr.
  void* symbol(const char* exportedName) const noexcept;

  // "cuMemMap: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", for log lines.
  std::string describe(std::string_view call, CUresult result) const;
};

} // namespace mqx::device::cuda
