// What each operator's kernels read and write: the access advice (paper
// §4.1, docs/architecture.md decision 6) given right before each launch, defined
// once so that the CUDA operators (through cudaAdvice) and the simulated
// device's operators (through MemoryManager::advise) give exactly the same.
// INPUT: the kernel reads the buffer. OUTPUT: it overwrites all of it (no
// load needed). BOTH: it writes part of it (compaction outputs, hash slots,
// aggregation arrays) or reads and writes it. Null buffers are left out.
#pragma once

#include "ssb/gpu/operator_types.hpp"

#include <vector>

namespace mqx::ssb::gpu {

// The values of MQX_ADVICE_INPUT/OUTPUT/BOTH (mqx/advice.h).
enum class BufferAccess : int { Input = 1, Output = 2, Both = 3 };

struct BufferAdvice {
  const void *buffer;
  BufferAccess access;
};
using LaunchAdvice = std::vector<BufferAdvice>;

// Selection: reads the column and the selection, appends to out (only the
// first `count` entries are written) through the counter.
LaunchAdvice selectAdvice(const std::int32_t *column, const std::int32_t *selection,
                          const std::int32_t *out, const std::uint32_t *counter);
// Gather: the executor allocates gather outputs at exactly n entries.
LaunchAdvice gatherAdvice(const std::int32_t *source, const std::int32_t *indices,
                          const std::int32_t *out);
// Hash table clearing writes every slot, values included.
LaunchAdvice clearTableAdvice(const DeviceHashTable &table);
// Build: only the occupied slots are written.
LaunchAdvice buildAdvice(const std::int32_t *keys, const std::int32_t *payload,
                         const std::int32_t *selection, const DeviceHashTable &table);
// Probe: outputs hold n entries, of which only the matches are written.
LaunchAdvice probeAdvice(const std::int32_t *foreignKeys, const std::int32_t *selection,
                         const DeviceHashTable &table, const std::int32_t *rowsOut,
                         const std::int32_t *positionsOut, const std::int32_t *payloadOut,
                         const std::uint32_t *counter);
LaunchAdvice aggregateAdvice(const GroupKeys &keys, const std::int32_t *first,
                             const std::int32_t *second, const unsigned long long *sums,
                             const unsigned long long *counts);
LaunchAdvice fusedStarAdvice(const FusedStar &star, const unsigned long long *sums,
                             const unsigned long long *counts);

} // namespace mqx::ssb::gpu
