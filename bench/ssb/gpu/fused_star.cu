// One grid-stride pass over lineorder per query: a row leaves at its first
// failed filter or missed probe, so most rows read only one or two columns.
#include "ssb/gpu/fused_star.hpp"
#include "ssb/gpu/hash_slot.hpp"
#include "ssb/gpu/launch.cuh"

namespace mqx::ssb::gpu {
namespace {

__global__ void fusedStarKernel(FusedStar star, std::int32_t n, unsigned long long *sums,
                                unsigned long long *counts) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    bool pass = true;
    for (int f = 0; f < star.filterCount && pass; ++f)
      pass = star.filter[f].contains(star.filterColumn[f][i]);
    std::int64_t slot = 0;
    for (int j = 0; j < star.joinCount && pass; ++j) {
      std::int32_t payload = 0;
      pass = detail::lookup(star.table[j], star.foreignKey[j][i], payload);
      slot += static_cast<std::int64_t>(payload - star.base[j]) * star.stride[j];
    }
    if (!pass)
      continue;
    std::int64_t value = star.first[i];
    if (star.measure == DeviceMeasure::Product)
      value *= star.second[i];
    else if (star.measure == DeviceMeasure::Difference)
      value -= star.second[i];
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
