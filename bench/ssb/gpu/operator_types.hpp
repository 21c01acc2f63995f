// The values the SSB operators exchange, on every device (plain C++, usable
// in CUDA kernels and in the simulated device's host kernels): hash tables,
// group keys, measures and the fused kernel's description.
#pragma once

#include "ssb/gpu/value_set.hpp"

#include <cstdint>

namespace mqx::ssb::gpu {

// An open-addressing hash table (linear probing) of int32 keys, each carrying
// one int32 payload; capacity is a power of two at least twice the rows.
// Keys and values may lie in one allocation (the executor puts them in one,
// since under mqx every allocation is a region of at least 2 MiB).
struct DeviceHashTable {
  std::int32_t *keys;
  std::int32_t *values;
  std::uint32_t capacity;
};
inline constexpr std::int32_t kEmptyKey = INT32_MIN; // no SSB key

inline std::uint32_t hashCapacity(std::int32_t rows) {
  std::uint32_t capacity = 16;
  while (capacity < 2u * static_cast<std::uint32_t>(rows))
    capacity *= 2;
  return capacity;
}

// Dense group-by aggregation keys: slot = sum_j (column[j][i] - base[j]) *
// stride[j].
inline constexpr int kMaxGroupKeys = 4;
struct GroupKeys {
  const std::int32_t *column[kMaxGroupKeys];
  std::int32_t base[kMaxGroupKeys];
  std::int64_t stride[kMaxGroupKeys];
  int count;
};
enum class DeviceMeasure : int { Product = 0, Value = 1, Difference = 2 };

// The fused variant of a star query's lineorder pass (fused_star.hpp).
inline constexpr int kMaxFusedFilters = 2;
inline constexpr int kMaxFusedJoins = 4;
struct FusedStar {
  const std::int32_t *filterColumn[kMaxFusedFilters];
  ValueSet filter[kMaxFusedFilters];
  int filterCount;
  const std::int32_t *foreignKey[kMaxFusedJoins];
  DeviceHashTable table[kMaxFusedJoins];
  // A grouped join adds (payload - base) * stride to the slot; stride 0
  // marks a join that only filters.
  std::int32_t base[kMaxFusedJoins];
  std::int64_t stride[kMaxFusedJoins];
  int joinCount;
  DeviceMeasure measure;
  const std::int32_t *first;
  const std::int32_t *second; // null for DeviceMeasure::Value
};

} // namespace mqx::ssb::gpu
