// NativeLaunch: the application's launch call as the hook layer received it,
// carried to the backend in KernelLaunch::native so that the backend replays
// it unchanged (kernelParams or the `extra` buffer, launch attributes,
// cooperative launches), taking only grid, block, shared memory and stream
// from the KernelLaunch (the core may have changed them).
//
// It lives beside the backend rather than in the hook layer because the
// backend reads it; the hooks fill it.
#pragma once

#include "device/cuda/cuda_headers.hpp"

namespace mqx::device::cuda {

struct NativeLaunch {
  enum class Kind { Kernel, KernelEx, Cooperative };
  Kind kind = Kind::Kernel;
  CUfunction function = nullptr;
  void** kernelParams = nullptr;
  void** extra = nullptr;                 // Kernel and KernelEx
  const CUlaunchConfig* config = nullptr; // KernelEx: attributes come from here
};

} // namespace mqx::device::cuda
