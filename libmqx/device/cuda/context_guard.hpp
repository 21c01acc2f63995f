// ContextGuard: makes the backend's context current for one scope. The
// backend is called from application threads (which normally have it current
// already: then this costs one cuCtxGetCurrent) and from mqx's own threads
// (which have no context).
#pragma once

#include "device/cuda/driver_api.hpp"

namespace mqx::device::cuda {

class ContextGuard {
public:
  ContextGuard(const DriverApi& api, CUcontext context) noexcept : api_(api) {
    CUcontext current = nullptr;
    if (api_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context) return;
    pushed_ = api_.cuCtxPushCurrent_v2(context) == CUDA_SUCCESS;
  }
  ~ContextGuard() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    api_.cuCtxPopCurrent_v2(&popped);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

private:
  const DriverApi& api_;
  bool pushed_ = false;
};

} // namespace mqx::device::cuda
