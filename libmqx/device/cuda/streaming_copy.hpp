// streamingCopy: memcpy with non-temporal stores, for copies into a pinned
// staging buffer that the DMA engine reads next. A plain memcpy of pieces
// this size (below glibc's non-temporal threshold) first reads every
// destination line for ownership and leaves it in the cache, where nothing
// on the CPU reads it again: three memory transfers per byte instead of two,
// on the path whose speed is the host's memory bandwidth (staged pageable
// copies, docs/interposer.md).
#pragma once

#include <cstddef>

namespace mqx::device::cuda {

// Copies `bytes` from `source` to `destination` and makes the stores visible
// to other agents (the DMA engine) before returning. Falls back to memcpy
// where the target has no streaming stores.
void streamingCopy(void* destination, const void* source, std::size_t bytes);

} // namespace mqx::device::cuda
