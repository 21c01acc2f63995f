// A batch of linear copies (cuMemcpyBatchAsync) issued copy by copy, in
// order, through a one-copy call: copy_batch_hooks.cpp does this for a batch
// that reaches managed memory. No cuda.h here: tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mqx::hook {

// Calls `copyOne(destination, source, bytes)` for each copy of the batch,
// in order, and stops at the first that does not return `success`. Sets
// `*failIndex` (where given: CUDA 12.8's ABI) to that copy's index, or to
// SIZE_MAX when every copy succeeded (the driver's convention for "no copy
// in particular"). Returns the first failure, or `success`; `invalid` when
// an array is missing.
template <typename Result, typename Address, typename CopyOne>
Result forEachCopyOfBatch(const Address* destinations, const Address* sources, const std::size_t* sizes,
                          std::size_t count, std::size_t* failIndex, Result success, Result invalid, CopyOne copyOne) {
  if (count != 0 && (destinations == nullptr || sources == nullptr || sizes == nullptr)) return invalid;
  for (std::size_t i = 0; i < count; ++i) {
    if (const Result result = copyOne(destinations[i], sources[i], sizes[i]); result != success) {
      if (failIndex != nullptr) *failIndex = i;
      return result;
    }
  }
  if (failIndex != nullptr) *failIndex = SIZE_MAX;
  return success;
}

} // namespace mqx::hook
