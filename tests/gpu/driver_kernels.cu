// Kernels of the driver-API test, built to a cubin and loaded with
// cuModuleLoad (the driver API has no <<<>>>).
#include <cstddef>
#include <cstdint>

namespace {
__device__ std::uint32_t devicePattern(std::uint32_t seed, std::uint64_t i) {
  return seed * 0x9E3779B9U ^ static_cast<std::uint32_t>(i * 2654435761ULL);
}
} // namespace

extern "C" __global__ void fill(std::uint32_t* data, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = devicePattern(seed, i);
}

extern "C" __global__ void add(std::uint32_t* data, std::size_t n, std::uint32_t delta) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += delta;
}

extern "C" __global__ void copy(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i];
}

struct Pair {
  const std::uint32_t* in;
  std::uint32_t* out;
  std::size_t n;
};

extern "C" __global__ void pair(Pair p) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
    p.out[i] = p.in[i] + 1;
}

// Operands named only by a table in device memory (batched BLAS does this).
struct AddTable {
  std::uint32_t* data;
  std::size_t n;
  std::uint32_t delta;
};

extern "C" __global__ void addThroughTable(const AddTable* table) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < table->n; i += gridDim.x * blockDim.x)
    table->data[i] += table->delta;
}
