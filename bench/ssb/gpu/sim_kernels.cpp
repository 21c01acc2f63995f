#include "ssb/gpu/sim_kernels.hpp"

#include "ssb/gpu/hash_slot.hpp"
#include "ssb/gpu/row_operations.hpp"

namespace mqx::ssb::gpu::sim {
namespace {

std::int32_t rowAt(const std::int32_t *selection, std::int32_t i) {
  return selection ? selection[i] : i;
}

} // namespace

void selectKernel(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                  ValueSet accepted, std::int32_t *out, std::uint32_t *counter) {
  for (std::int32_t i = 0; i < n; ++i) {
    std::int32_t row = rowAt(selection, i);
    if (accepted.contains(column[row]))
      out[(*counter)++] = row;
  }
}

void gatherKernel(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
                  std::int32_t *out) {
  for (std::int32_t i = 0; i < n; ++i)
    out[i] = source[indices[i]];
}

void clearKernel(DeviceHashTable table) {
  for (std::uint32_t i = 0; i < table.capacity; ++i) {
    table.keys[i] = kEmptyKey;
    table.values[i] = 0;
  }
}

void buildKernel(const std::int32_t *keys, const std::int32_t *payload,
                 const std::int32_t *selection, std::int32_t n, DeviceHashTable table) {
  std::uint32_t mask = table.capacity - 1;
  for (std::int32_t i = 0; i < n; ++i) {
    std::int32_t row = rowAt(selection, i);
    std::int32_t key = keys[row];
    // Terminates: the table has more slots than rows.
    std::uint32_t slot = detail::hashSlot(key, mask);
    while (table.keys[slot] != kEmptyKey && table.keys[slot] != key)
      slot = (slot + 1) & mask;
    table.keys[slot] = key;
    table.values[slot] = payload ? payload[row] : 0;
  }
}

void probeKernel(const std::int32_t *foreignKeys, const std::int32_t *selection, std::int32_t n,
                 DeviceHashTable table, std::int32_t *rowsOut, std::int32_t *positionsOut,
                 std::int32_t *payloadOut, std::uint32_t *counter) {
  for (std::int32_t i = 0; i < n; ++i) {
    std::int32_t row = rowAt(selection, i);
    std::int32_t payload = 0;
    if (!detail::lookup(table, foreignKeys[row], payload))
      continue;
    std::uint32_t out = (*counter)++;
    rowsOut[out] = row;
    if (positionsOut)
      positionsOut[out] = i;
    if (payloadOut)
      payloadOut[out] = payload;
  }
}

void aggregateKernel(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                     const std::int32_t *second, std::int32_t n, unsigned long long *sums,
                     unsigned long long *counts) {
  for (std::int32_t i = 0; i < n; ++i) {
    const std::int64_t slot = detail::groupSlot(keys, i);
    // Unsigned adds wrap modulo 2^64 like the GPU's atomicAdd: two's
    // complement sums of negative profits come out right.
    sums[slot] += static_cast<unsigned long long>(detail::measureOf(measure, first[i], second, i));
    counts[slot] += 1;
  }
}

void fusedStarKernel(FusedStar star, std::int32_t n, unsigned long long *sums,
                     unsigned long long *counts) {
  for (std::int32_t i = 0; i < n; ++i) {
    std::int64_t slot = 0;
    if (!detail::fusedStarSlot(star, i, slot))
      continue;
    sums[slot] += static_cast<unsigned long long>(
        detail::measureOf(star.measure, star.first[i], star.second, i));
    counts[slot] += 1;
  }
}

} // namespace mqx::ssb::gpu::sim
