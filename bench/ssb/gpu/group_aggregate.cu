// Dense group-by aggregation: every SSB group-by attribute, restricted to
// the dimension rows a query keeps, spans a small code or year range, so a
// direct array indexed by the attributes replaces a hash table. Sums are
// exact 64-bit integers: atomicAdd on unsigned long long wraps modulo 2^64,
// which is two's complement addition, so negative profits add correctly.
#include "ssb/gpu/launch.cuh"
#include "ssb/gpu/operators.hpp"
#include "ssb/gpu/row_operations.hpp"

namespace mqx::ssb::gpu {
namespace {

__global__ void aggregateKernel(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                                const std::int32_t *second, std::int32_t n,
                                unsigned long long *sums, unsigned long long *counts) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t slot = detail::groupSlot(keys, i);
    const std::int64_t value = detail::measureOf(measure, first[i], second, i);
    atomicAdd(&sums[slot], static_cast<unsigned long long>(value));
    atomicAdd(&counts[slot], 1ull);
  }
}

} // namespace

void aggregateGroups(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                     const std::int32_t *second, std::int32_t n, std::int64_t slots,
                     unsigned long long *sums, unsigned long long *counts) {
  if (n == 0)
    return;
  detail::advise(aggregateAdvice(keys, first, second, sums, counts));
  aggregateKernel<<<detail::gridFor(n), detail::kBlockSize>>>(keys, measure, first, second, n, sums,
                                                              counts);
  MQX_SSB_LAUNCHED();
  MQX_SSB_CUDA(cudaDeviceSynchronize());
}

} // namespace mqx::ssb::gpu
