// The kernels of the occupancy comparison (occupancy_gpu_test.cpp): grid-
// stride loops with different register counts and static and dynamic
// shared memory. Compiled by nvcc (C++17); the test itself is C++20.
#include "occupancy_kernels.hpp"

namespace {

__global__ void lightKernel(float* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += 1.0f;
}

// Many values live at once: a high register count.
__global__ void heavyRegisterKernel(float* data, int n) {
  float values[48];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
#pragma unroll
    for (int k = 0; k < 48; ++k)
      values[k] = data[(i + k * 97) % n] * (k + 1);
    float sum = 0;
#pragma unroll
    for (int k = 0; k < 48; ++k)
      sum += values[k] * values[(k * 7) % 48];
    data[i] = sum;
  }
}

__global__ void staticSharedKernel(float* data, int n) {
  __shared__ float buffer[4096]; // 16 KiB
  for (int i = threadIdx.x; i < 4096; i += blockDim.x)
    buffer[i] = static_cast<float>(i);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += buffer[i % 4096];
}

__global__ void largeStaticSharedKernel(float* data, int n) {
  __shared__ float buffer[10240]; // 40 KiB
  for (int i = threadIdx.x; i < 10240; i += blockDim.x)
    buffer[i] = static_cast<float>(i);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += buffer[i % 10240];
}

__global__ void dynamicSharedKernel(float* data, int n) {
  extern __shared__ float buffer[];
  buffer[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += buffer[threadIdx.x];
}

// Static and dynamic together, and a block limit of 256.
__global__ void __launch_bounds__(256) boundedMixedKernel(float* data, int n) {
  __shared__ float fixed[1024];
  extern __shared__ float buffer[];
  fixed[threadIdx.x] = buffer[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += fixed[threadIdx.x] + buffer[threadIdx.x];
}

} // namespace

std::vector<OccupancyKernel> occupancyKernels(int optinSharedBytes) {
  return {
      {"light", reinterpret_cast<const void*>(lightKernel), {0}},
      {"heavy_registers", reinterpret_cast<const void*>(heavyRegisterKernel), {0}},
      {"static_16KiB", reinterpret_cast<const void*>(staticSharedKernel), {0, 4096}},
      {"static_40KiB", reinterpret_cast<const void*>(largeStaticSharedKernel), {0}},
      {"dynamic", reinterpret_cast<const void*>(dynamicSharedKernel), {4096, 12288, 49152, 100000, optinSharedBytes}},
      {"bounded_mixed", reinterpret_cast<const void*>(boundedMixedKernel), {1024, 30000}},
  };
}
