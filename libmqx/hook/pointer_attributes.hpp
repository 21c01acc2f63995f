// What cuPointerGetAttribute(s) answer for an address in a managed region.
// The driver cannot answer for it: the range is a reservation whose pages
// may be unmapped, and its "allocation" is one physical chunk, not the
// region. The answers describe the region as a cuMemAlloc allocation.
#pragma once

#include "core/memory_manager.hpp"
#include "device/cuda/cuda_headers.hpp"

namespace mqx::hook {

struct ManagedPointer {
  CUdeviceptr address = 0;
  RegionInfo region;
  CUcontext context = nullptr;
  int deviceOrdinal = 0;
};

// Writes the attribute's value to `data`. CUDA_ERROR_NOT_SUPPORTED for an
// attribute mqx does not describe (the caller asks the driver instead).
CUresult describeManagedPointer(const ManagedPointer& pointer, CUpointer_attribute attribute, void* data);

} // namespace mqx::hook
