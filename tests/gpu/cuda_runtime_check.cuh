// What the runtime-API GPU test programs share: a check of every cudart call
// (the call, its place and the error, then exit 1) and the device side of
// gpu_test::pattern with the kernel that writes it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                                                                  \
  do {                                                                                                                 \
    cudaError_t cuda_ok_error_ = (call);                                                                               \
    if (cuda_ok_error_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(cuda_ok_error_));          \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace gpu_test {

// Grid-stride kernels: this many threads a block, at most 4096 blocks.
constexpr unsigned kThreads = 256;
inline unsigned blocksFor(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 4096));
}

// gpu_test::pattern, computed on the device.
__device__ inline std::uint32_t devicePattern(std::uint32_t seed, std::uint64_t i) {
  return seed * 0x9E3779B9U ^ static_cast<std::uint32_t>(i * 2654435761ULL);
}

// One definition per program: each test program is one translation unit.
__global__ void fillKernel(std::uint32_t* data, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = devicePattern(seed, i);
}

} // namespace gpu_test
