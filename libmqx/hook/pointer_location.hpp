// Where an address of a unified-addressing call (cuMemcpy, a 2D/3D copy of
// memory type UNIFIED) lives, and the duty that comes with host
// destinations: before anyone but the application writes host memory (a DMA
// does not fault), copy-on-write protection there must be broken.
#pragma once

#include <cstddef>

#include "core/memory_manager.hpp"
#include "device/cuda/cuda_headers.hpp"

namespace mqx::hook {

enum class Where { Managed, Device, Host };

// Managed region, other device memory (the driver's word), or host memory
// (pinned or pageable).
Where locate(const MemoryManager& manager, CUdeviceptr address);

// MemoryManager::prepareHostWrite, skipped cheaply when nothing is protected.
void beforeHostWrite(MemoryManager& manager, const void* destination, std::size_t bytes);

} // namespace mqx::hook
