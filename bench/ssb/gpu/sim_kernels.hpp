// The host implementations of the SSB operators' kernels, for the simulated
// device: the same parameters as the CUDA kernels (selection.cu, gather.cu,
// hash_join.cu, group_aggregate.cu, fused_star.cu), the same results. A sim
// kernel runs on one host thread of the simulated device's stream, so the
// atomic counters and atomic adds of the CUDA kernels are plain increments
// here; the hash table's addressing is shared (hash_slot.hpp).
#pragma once

#include "ssb/gpu/operator_types.hpp"

#include <cstdint>

namespace mqx::ssb::gpu::sim {

void selectKernel(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                  ValueSet accepted, std::int32_t *out, std::uint32_t *counter);
void gatherKernel(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
                  std::int32_t *out);
void clearKernel(DeviceHashTable table);
void buildKernel(const std::int32_t *keys, const std::int32_t *payload,
                 const std::int32_t *selection, std::int32_t n, DeviceHashTable table);
void probeKernel(const std::int32_t *foreignKeys, const std::int32_t *selection, std::int32_t n,
                 DeviceHashTable table, std::int32_t *rowsOut, std::int32_t *positionsOut,
                 std::int32_t *payloadOut, std::uint32_t *counter);
void aggregateKernel(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                     const std::int32_t *second, std::int32_t n, unsigned long long *sums,
                     unsigned long long *counts);
void fusedStarKernel(FusedStar star, std::int32_t n, unsigned long long *sums,
                     unsigned long long *counts);

} // namespace mqx::ssb::gpu::sim
