// Kernels of the GPU benchmark, built to a cubin (the benchmark uses the
// driver API so that native and mqx runs take the same path).
#include <cstddef>
#include <cstdint>

// Does nothing with its pointer: launch overhead alone.
extern "C" __global__ void empty(std::uint32_t* data) {}

// Writes every word: makes a region dirty without reading it.
extern "C" __global__ void fill(std::uint32_t* data, std::size_t n, std::uint32_t value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = value;
}

// Reads one word per 4 KiB: "a kernel needs this data" at almost no cost.
extern "C" __global__ void touch(const std::uint32_t* data, std::size_t n, std::uint32_t* sink) {
  std::uint32_t sum = 0;
  for (std::size_t i = (blockIdx.x * blockDim.x + threadIdx.x) * 1024; i < n; i += gridDim.x * blockDim.x * 1024)
    sum += data[i];
  if (sum == 0xFFFFFFFFU) *sink = sum;
}
