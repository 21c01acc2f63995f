// Kernels of the peer benchmark's CUDA C++ workload (cuda_patterns.cpp):
// integer arithmetic only, so that every system computes the same bytes and
// the checksums compare exactly.
#include <cstdint>

// Buffer `id`'s initial content: a hash of its index and of every element's.
extern "C" __global__ void fill(std::uint32_t* data, std::size_t count, std::uint32_t id) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ (id * 40503u + 1u);
    data[i] = x ^ (x >> 15);
  }
}

// One touch of a buffer: read every element and write it back changed
// (a linear congruential step salted by the touch's number).
extern "C" __global__ void update(std::uint32_t* data, std::size_t count, std::uint32_t salt) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    data[i] = data[i] * 1664525u + (1013904223u ^ salt);
}

// The sum of a buffer's elements into *sum (64-bit, exact).
extern "C" __global__ void checksum(const std::uint32_t* data, std::size_t count, unsigned long long* sum) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    local += data[i];
  atomicAdd(sum, local);
}
