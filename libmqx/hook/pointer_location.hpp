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

// A managed region (of any managed device), other device memory (the
// driver's word), or host memory (pinned or pageable).
Where locate(CUdeviceptr address);

// MemoryManager::prepareHostWrite of the manager that protects host memory
// (Runtime::hostManager), skipped cheaply when nothing is protected.
void beforeHostWrite(const void* destination, std::size_t bytes);

} // namespace mqx::hook
