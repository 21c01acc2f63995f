// What every operator's launch shares: the grid size for n elements (enough
// blocks to fill the device, never more than the elements need; the kernels'
// grid-stride loops cover the rest) and advice that skips absent buffers.
#pragma once

#include "ssb/gpu/cuda_check.hpp"
#include "ssb/gpu/operator_advice.hpp"

#include <mqx/advice.h>

#include <algorithm>
#include <cstdint>

namespace mqx::ssb::gpu::detail {

inline constexpr int kBlockSize = 256;

inline int gridFor(std::int64_t n) {
  static int blocksPerDevice = [] {
    int device = 0, multiprocessors = 0;
    MQX_SSB_CUDA(cudaGetDevice(&device));
    MQX_SSB_CUDA(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    return multiprocessors * 8;
  }();
  std::int64_t needed = (n + kBlockSize - 1) / kBlockSize;
  return static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(needed, blocksPerDevice)));
}

// Advice is a hint for mqx (and a no-op natively): its status is not an
// error of the query, so it is not checked.
inline void advise(const LaunchAdvice &advice) {
  for (const BufferAdvice &entry : advice)
    (void)cudaAdvice(entry.buffer, static_cast<int>(entry.access));
}

// Reads and zeroes nothing: copies the device counter back (synchronising
// with the kernel that wrote it).
inline std::int32_t readCounter(const std::uint32_t *counter) {
  std::uint32_t value = 0;
  MQX_SSB_CUDA(cudaMemcpy(&value, counter, sizeof value, cudaMemcpyDeviceToHost));
  return static_cast<std::int32_t>(value);
}

} // namespace mqx::ssb::gpu::detail
