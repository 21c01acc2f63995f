// oversubscribe_query MIB PASSES SEED [BUFFER_MIB]: a GPU "query" with a
// footprint of MIB MiB in buffers of BUFFER_MIB (default 256) MiB: fills each on the device, runs PASSES in-place
// kernels over each buffer in turn (one buffer per launch: a small working
// set), copies everything back and checks every element against the same
// computation on the host. Exit 0 correct, 1 wrong data, 2 a CUDA error
// (out of memory natively when the node is oversubscribed).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {


__host__ __device__ std::uint32_t initial(std::size_t index, std::uint32_t seed) {
  return static_cast<std::uint32_t>(index) * 2654435761u + seed;
}

__global__ void fill(std::uint32_t* data, std::size_t n, std::size_t base, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = initial(base + i, seed);
}

__global__ void transform(std::uint32_t* data, std::size_t n, std::uint32_t pass) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = data[i] * 3u + pass;
}

bool check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "oversubscribe_query: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: oversubscribe_query MIB PASSES SEED [BUFFER_MIB]\n");
    return 2;
  }
  const std::size_t kChunkBytes = (argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 256) << 20;
  const std::size_t kChunkElements = kChunkBytes / sizeof(std::uint32_t);
  const std::size_t chunks = (std::strtoull(argv[1], nullptr, 10) << 20) / kChunkBytes;
  const int passes = std::atoi(argv[2]);
  const auto seed = static_cast<std::uint32_t>(std::atoi(argv[3]));
  std::vector<std::uint32_t*> buffers(chunks, nullptr);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (!check(cudaMalloc(&buffers[c], kChunkBytes), "cudaMalloc")) return 2;
    fill<<<1024, 256>>>(buffers[c], kChunkElements, c * kChunkElements, seed);
    if (!check(cudaGetLastError(), "fill")) return 2;
  }
  for (int pass = 0; pass < passes; ++pass)
    for (std::size_t c = 0; c < chunks; ++c) {
      transform<<<1024, 256>>>(buffers[c], kChunkElements, static_cast<std::uint32_t>(pass));
      if (!check(cudaGetLastError(), "transform")) return 2;
    }
  if (!check(cudaDeviceSynchronize(), "synchronize")) return 2;
  std::vector<std::uint32_t> host(kChunkElements);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (!check(cudaMemcpy(host.data(), buffers[c], kChunkBytes, cudaMemcpyDeviceToHost), "cudaMemcpy")) return 2;
    for (std::size_t i = 0; i < kChunkElements; ++i) {
      std::uint32_t expected = initial(c * kChunkElements + i, seed);
      for (int pass = 0; pass < passes; ++pass)
        expected = expected * 3u + static_cast<std::uint32_t>(pass);
      if (host[i] != expected) {
        std::fprintf(stderr, "oversubscribe_query: wrong value at buffer %zu element %zu\n", c, i);
        return 1;
      }
    }
  }
  for (auto* buffer : buffers)
    cudaFree(buffer);
  std::printf("ok %zu MiB\n", chunks * (kChunkBytes >> 20));
  return 0;
}
