// One grid-stride pass over lineorder per query: a row leaves at its first
// failed filter or missed probe, so most rows read only one or two columns.
#include "ssb/gpu/fused_star.hpp"
#include "ssb/gpu/launch.cuh"
#include "ssb/gpu/row_operations.hpp"

namespace mqx::ssb::gpu {
namespace {

__global__ void fusedStarKernel(FusedStar star, std::int32_t n, unsigned long long *sums,
                                unsigned long long *counts) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t slot = 0;
    if (!detail::fusedStarSlot(star, i, slot))
      continue;
    const std::int64_t value = detail::measureOf(star.measure, star.first[i], star.second, i);
    atomicAdd(&sums[slot], static_cast<unsigned long long>(value));
    atomicAdd(&counts[slot], 1ull);
  }
}

} // namespace

void runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                  unsigned long long *counts) {
  if (n == 0)
    return;
  detail::advise(fusedStarAdvice(star, sums, counts));
  fusedStarKernel<<<detail::gridFor(n), detail::kBlockSize>>>(star, n, sums, counts);
  MQX_SSB_LAUNCHED();
  MQX_SSB_CUDA(cudaDeviceSynchronize());
}

} // namespace mqx::ssb::gpu
