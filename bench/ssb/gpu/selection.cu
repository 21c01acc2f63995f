// Selection into a selection vector: one pass, compaction by an atomic
// counter (one atomic per passing row; the SSB selections keep at most half
// of their input, and correctness, not the last microsecond, comes first).
#include "ssb/gpu/launch.cuh"
#include "ssb/gpu/operators.hpp"

namespace mqx::ssb::gpu {
namespace {

__global__ void selectKernel(const std::int32_t *column, const std::int32_t *selection,
                             std::int32_t n, ValueSet accepted, std::int32_t *out,
                             std::uint32_t *counter) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int32_t row = selection ? selection[i] : static_cast<std::int32_t>(i);
    if (accepted.contains(column[row]))
      out[atomicAdd(counter, 1u)] = row;
  }
}

} // namespace

std::int32_t selectRows(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                        ValueSet accepted, std::int32_t *out, std::uint32_t *counter) {
  if (n == 0)
    return 0;
  MQX_SSB_CUDA(cudaMemset(counter, 0, sizeof *counter));
  detail::advise(selectAdvice(column, selection, out, counter));
  selectKernel<<<detail::gridFor(n), detail::kBlockSize>>>(column, selection, n, accepted, out,
                                                           counter);
  MQX_SSB_LAUNCHED();
  return detail::readCounter(counter);
}

} // namespace mqx::ssb::gpu
