// What the aggregation and the fused pass compute for one lineorder row,
// shared by the CUDA kernels and the simulated device's host kernels
// (sim_kernels.cpp), so that both compute exactly the same groups and sums.
#pragma once

#include "ssb/gpu/hash_slot.hpp"
#include "ssb/gpu/operator_types.hpp"

namespace mqx::ssb::gpu::detail {

// Row i's measure; `second` is read only for Product and Difference.
MQX_SSB_HOST_DEVICE inline std::int64_t measureOf(DeviceMeasure measure, std::int64_t first,
                                                  const std::int32_t *second, std::int64_t i) {
  if (measure == DeviceMeasure::Product)
    return first * second[i];
  if (measure == DeviceMeasure::Difference)
    return first - second[i];
  return first;
}

// Row i's slot in the dense group array: sum of (key - base) * stride.
MQX_SSB_HOST_DEVICE inline std::int64_t groupSlot(const GroupKeys &keys, std::int64_t i) {
  std::int64_t slot = 0;
  for (int j = 0; j < keys.count; ++j)
    slot += static_cast<std::int64_t>(keys.column[j][i] - keys.base[j]) * keys.stride[j];
  return slot;
}

// Row i of a fused pass: false at its first failed filter or missed probe
// (so most rows read only one or two columns); else true, with its group
// slot in `slot`.
MQX_SSB_HOST_DEVICE inline bool fusedStarSlot(const FusedStar &star, std::int64_t i,
                                              std::int64_t &slot) {
  for (int f = 0; f < star.filterCount; ++f)
    if (!star.filter[f].contains(star.filterColumn[f][i]))
      return false;
  slot = 0;
  for (int j = 0; j < star.joinCount; ++j) {
    std::int32_t payload = 0;
    if (!lookup(star.table[j], star.foreignKey[j][i], payload))
      return false;
    slot += static_cast<std::int64_t>(payload - star.base[j]) * star.stride[j];
  }
  return true;
}

} // namespace mqx::ssb::gpu::detail
