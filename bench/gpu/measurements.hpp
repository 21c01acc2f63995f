// The measurements of the GPU benchmark. Native ones run in a process
// without libmqx; mqx ones in a process with libmqx preloaded, through the
// same driver calls, so that the difference is what mqx adds.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "bench_results.hpp"

namespace mqx::bench {

struct Setup {
  CUfunction empty = nullptr;
  CUfunction fill = nullptr;
  CUfunction touch = nullptr;
  CUstream stream = nullptr;
  std::size_t bytes = 0; // transfer size
  int repetitions = 3;
};

// Launches per second of an empty kernel whose argument is `pointer`, as the
// wall time per launch of a long run (enqueue-bound): <prefix>launch_us.
void measureLaunch(const Setup& setup, CUdeviceptr pointer, const std::string& prefix, Results& results);

// Native: pageable and pinned copies both ways, a pageable load followed by
// a kernel, registering the source instead, and one stream memory write.
void measureNativeTransfers(const Setup& setup, Results& results);

// Native: mqx's CUDA backend copying pageable memory through its staging
// ring, with 1, 4 and 8 copy threads.
void measureStaging(const Setup& setup, Results& results);

// Native process, mqx's MemoryManager and CudaBackend driven directly: the
// launch path without the hooks, with every fence written and with fences
// coalesced over 50 us (manager_launch_us_fence_coalesce_<n>us).
void measureManagerLaunch(const Setup& setup, Results& results);

// Under mqx: a lazy host-to-device copy from pageable memory completed by a
// kernel that needs the data.
void measureLazyLoad(const Setup& setup, Results& results);

// Under mqx: a launch that forces a dirty region of setup.bytes out (the
// limit must be setup.bytes plus less than a page; output-only advice).
void measureEviction(const Setup& setup, Results& results);

} // namespace mqx::bench
