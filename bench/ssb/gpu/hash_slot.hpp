// The hash table's addressing, shared by the probe operator, the fused
// kernel and the simulated device's host kernels, so that all find exactly
// what the build inserted.
#pragma once

#include "ssb/gpu/operator_types.hpp"

namespace mqx::ssb::gpu::detail {

// murmur3's finaliser: spreads the dense SSB keys and the yyyymmdd date keys.
MQX_SSB_HOST_DEVICE inline std::uint32_t hashSlot(std::int32_t key, std::uint32_t mask) {
  auto h = static_cast<std::uint32_t>(key);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h & mask;
}

// Finds `key` by linear probing; terminates because at least half of the
// slots are empty. kEmptyKey itself is never found.
MQX_SSB_HOST_DEVICE inline bool lookup(const DeviceHashTable &table, std::int32_t key,
                                       std::int32_t &payload) {
  if (key == kEmptyKey)
    return false;
  std::uint32_t mask = table.capacity - 1;
  for (std::uint32_t slot = hashSlot(key, mask);; slot = (slot + 1) & mask) {
    std::int32_t stored = table.keys[slot];
    if (stored == key) {
      payload = table.values[slot];
      return true;
    }
    if (stored == kEmptyKey)
      return false;
  }
}

} // namespace mqx::ssb::gpu::detail
