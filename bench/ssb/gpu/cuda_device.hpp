// The GPU as a QueryDevice: cudaMalloc'd buffers, synchronous copies, and
// the CUDA operators of operators.hpp and fused_star.hpp (which advise mqx
// through cudaAdvice; with libmqx.so preloaded every call here is managed).
#pragma once

#include "ssb/gpu/query_device.hpp"

#include <memory>

namespace mqx::ssb::gpu {

// Whether a CUDA device is usable (a driver and at least one device).
bool cudaDevicePresent();

// Creates the CUDA context (outside any timing, as the paper's queries run
// on an initialised device). Errors exit with status 2 naming the call.
std::unique_ptr<QueryDevice> openCudaDevice();

} // namespace mqx::ssb::gpu
