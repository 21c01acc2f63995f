#include "mix_kernels.hpp"

namespace {

constexpr std::uint32_t kEmpty = 0xffffffffu;

__device__ std::uint32_t slotOf(std::uint32_t key, int capacity) {
  return (key * 2654435761u) % static_cast<std::uint32_t>(capacity);
}

// Build: insert every key into an open-addressing table (linear probing).
__global__ void buildKernel(const std::uint32_t* keys, int n, std::uint32_t* table, int capacity) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    std::uint32_t slot = slotOf(keys[i], capacity);
    while (atomicCAS(&table[slot], kEmpty, keys[i]) != kEmpty)
      slot = (slot + 1) % capacity;
  }
}

// Scan: a range selection on a column, counting the rows selected.
__global__ void scanKernel(const std::uint32_t* values, int n, unsigned long long* selected) {
  unsigned long long count = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    count += (values[i] % 100) < 30 ? 1 : 0;
  if (count != 0) atomicAdd(selected, count);
}

// Probe: look every key up, counting the matches.
__global__ void probeKernel(const std::uint32_t* keys, int n, const std::uint32_t* table, int capacity,
                            unsigned long long* matches) {
  unsigned long long count = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    std::uint32_t slot = slotOf(keys[i], capacity);
    for (;;) {
      const std::uint32_t found = table[slot];
      if (found == keys[i]) {
        ++count;
        break;
      }
      if (found == kEmpty) break;
      slot = (slot + 1) % capacity;
    }
  }
  if (count != 0) atomicAdd(matches, count);
}

} // namespace

const void* phaseSymbol(Phase phase) {
  switch (phase) {
  case Phase::Build: return reinterpret_cast<const void*>(buildKernel);
  case Phase::Scan: return reinterpret_cast<const void*>(scanKernel);
  case Phase::Probe: return reinterpret_cast<const void*>(probeKernel);
  }
  return nullptr;
}

void launchPhase(const PhaseKernel& k, unsigned grid, unsigned block, cudaStream_t stream) {
  switch (k.phase) {
  case Phase::Build: buildKernel<<<grid, block, 0, stream>>>(k.input, k.elements, k.table, k.capacity); break;
  case Phase::Scan: scanKernel<<<grid, block, 0, stream>>>(k.input, k.elements, k.counter); break;
  case Phase::Probe:
    probeKernel<<<grid, block, 0, stream>>>(k.input, k.elements, k.table, k.capacity, k.counter);
    break;
  }
}
