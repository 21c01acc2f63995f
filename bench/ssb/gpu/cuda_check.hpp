// Every CUDA runtime call of the SSB GPU programs goes through MQX_SSB_CUDA:
// a failure prints the call, its place and CUDA's message and exits with
// status 2 (1 is kept for "result differs from the reference").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace mqx::ssb::gpu {

inline void checkCuda(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess)
    return;
  std::fprintf(stderr, "ssb gpu: %s failed at %s:%d: %s (%s)\n", call, file, line,
               cudaGetErrorString(status), cudaGetErrorName(status));
  std::exit(2);
}

} // namespace mqx::ssb::gpu

#define MQX_SSB_CUDA(call) ::mqx::ssb::gpu::checkCuda((call), #call, __FILE__, __LINE__)
// After a <<<>>> launch: launch configuration errors surface here, faults in
// the kernel at the operator's next synchronising call.
#define MQX_SSB_LAUNCHED() MQX_SSB_CUDA(cudaGetLastError())
