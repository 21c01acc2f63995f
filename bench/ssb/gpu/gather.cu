// Gather: materialises a column (or an intermediate) through a selection
// vector or a position list, the projection step between two operators.
#include "ssb/gpu/launch.cuh"
#include "ssb/gpu/operators.hpp"

namespace mqx::ssb::gpu {
namespace {

__global__ void gatherKernel(const std::int32_t *source, const std::int32_t *indices,
                             std::int32_t n, std::int32_t *out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = source[indices[i]];
}

} // namespace

void gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
            std::int32_t *out) {
  if (n == 0)
    return;
  detail::advise(gatherAdvice(source, indices, out));
  gatherKernel<<<detail::gridFor(n), detail::kBlockSize>>>(source, indices, n, out);
  MQX_SSB_LAUNCHED();
  MQX_SSB_CUDA(cudaDeviceSynchronize());
}

} // namespace mqx::ssb::gpu
