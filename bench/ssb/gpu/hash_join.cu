// Hash join build and probe: open addressing with linear probing on int32
// keys, one payload per key. Dimension tables are small (at most 200,000 x
// (1 + log2 SF) parts), the table is at most half full, so probe sequences
// stay short; a murmur finaliser spreads the dense SSB keys and the
// yyyymmdd date keys alike.
#include "ssb/gpu/hash_slot.cuh"
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

std::uint32_t hashCapacity(std::int32_t rows) {
  std::uint32_t capacity = 16;
  while (capacity < 2u * static_cast<std::uint32_t>(rows))
    capacity *= 2;
  return capacity;
}

void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                    const std::int32_t *selection, std::int32_t n, DeviceHashTable table) {
  detail::advise(table.keys, MQX_ADVICE_OUTPUT);
  detail::advise(table.values, MQX_ADVICE_OUTPUT);
  clearKernel<<<detail::gridFor(table.capacity), detail::kBlockSize>>>(table);
  MQX_SSB_LAUNCHED();
  if (n > 0) {
    detail::advise(keys, MQX_ADVICE_INPUT);
    detail::advise(payload, MQX_ADVICE_INPUT);
    detail::advise(selection, MQX_ADVICE_INPUT);
    detail::advise(table.keys, MQX_ADVICE_BOTH);
    detail::advise(table.values, MQX_ADVICE_BOTH); // only the occupied slots are written
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
  detail::advise(foreignKeys, MQX_ADVICE_INPUT);
  detail::advise(selection, MQX_ADVICE_INPUT);
  detail::advise(table.keys, MQX_ADVICE_INPUT);
  detail::advise(table.values, MQX_ADVICE_INPUT);
  // Outputs hold n entries, of which only the matches are written.
  detail::advise(rowsOut, MQX_ADVICE_BOTH);
  detail::advise(positionsOut, MQX_ADVICE_BOTH);
  detail::advise(payloadOut, MQX_ADVICE_BOTH);
  detail::advise(counter, MQX_ADVICE_BOTH);
  probeKernel<<<detail::gridFor(n), detail::kBlockSize>>>(foreignKeys, selection, n, table, rowsOut,
                                                          positionsOut, payloadOut, counter);
  MQX_SSB_LAUNCHED();
  return detail::readCounter(counter);
}

} // namespace mqx::ssb::gpu
