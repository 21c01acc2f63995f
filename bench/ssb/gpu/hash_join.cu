// Hash join build and probe: open addressing with linear probing on int32
// keys, one payload per key. Dimension tables are small (at most 200,000 x
// (1 + log2 SF) parts), the table is at most half full, so probe sequences
// stay short; a murmur finaliser spreads the dense SSB keys and the
// yyyymmdd date keys alike.
#include "ssb/gpu/hash_slot.hpp"
#include "ssb/gpu/launch.cuh"
#include "ssb/gpu/operators.hpp"

namespace mqx::ssb::gpu {
namespace {

// Writes every slot, values included, so that the clearing launch may
// advise its buffer as OUTPUT (nothing of it needs loading).
__global__ void clearKernel(DeviceHashTable table) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < table.capacity;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    table.keys[i] = kEmptyKey;
    table.values[i] = 0;
  }
}

__global__ void buildKernel(const std::int32_t *keys, const std::int32_t *payload,
                            const std::int32_t *selection, std::int32_t n, DeviceHashTable table) {
  std::uint32_t mask = table.capacity - 1;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int32_t row = selection ? selection[i] : static_cast<std::int32_t>(i);
    std::int32_t key = keys[row];
    std::int32_t value = payload ? payload[row] : 0;
    // Terminates: the table has more slots than rows.
    for (std::uint32_t slot = detail::hashSlot(key, mask);; slot = (slot + 1) & mask) {
      std::int32_t previous = atomicCAS(&table.keys[slot], kEmptyKey, key);
      if (previous == kEmptyKey || previous == key) {
        table.values[slot] = value;
        break;
      }
    }
  }
}

__global__ void probeKernel(const std::int32_t *foreignKeys, const std::int32_t *selection,
                            std::int32_t n, DeviceHashTable table, std::int32_t *rowsOut,
                            std::int32_t *positionsOut, std::int32_t *payloadOut,
                            std::uint32_t *counter) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int32_t row = selection ? selection[i] : static_cast<std::int32_t>(i);
    std::int32_t payload = 0;
    if (!detail::lookup(table, foreignKeys[row], payload))
      continue;
    std::uint32_t out = atomicAdd(counter, 1u);
    rowsOut[out] = row;
    if (positionsOut)
      positionsOut[out] = static_cast<std::int32_t>(i);
    if (payloadOut)
      payloadOut[out] = payload;
  }
}

} // namespace

void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                    const std::int32_t *selection, std::int32_t n, DeviceHashTable table) {
  detail::advise(clearTableAdvice(table));
  clearKernel<<<detail::gridFor(table.capacity), detail::kBlockSize>>>(table);
  MQX_SSB_LAUNCHED();
  if (n > 0) {
    detail::advise(buildAdvice(keys, payload, selection, table));
    buildKernel<<<detail::gridFor(n), detail::kBlockSize>>>(keys, payload, selection, n, table);
    MQX_SSB_LAUNCHED();
  }
  MQX_SSB_CUDA(cudaDeviceSynchronize());
}

std::int32_t probeHashTable(const std::int32_t *foreignKeys, const std::int32_t *selection,
                            std::int32_t n, DeviceHashTable table, std::int32_t *rowsOut,
                            std::int32_t *positionsOut, std::int32_t *payloadOut,
                            std::uint32_t *counter) {
  if (n == 0)
    return 0;
  MQX_SSB_CUDA(cudaMemset(counter, 0, sizeof *counter));
  detail::advise(
      probeAdvice(foreignKeys, selection, table, rowsOut, positionsOut, payloadOut, counter));
  probeKernel<<<detail::gridFor(n), detail::kBlockSize>>>(foreignKeys, selection, n, table, rowsOut,
                                                          positionsOut, payloadOut, counter);
  MQX_SSB_LAUNCHED();
  return detail::readCounter(counter);
}

} // namespace mqx::ssb::gpu
