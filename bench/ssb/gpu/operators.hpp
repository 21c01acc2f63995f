// The CUDA operators of the SSB engine, YDB style (MultiQx-GPU §2.1):
// operator at a time, column at a time, every intermediate materialised in
// device memory. Each function launches its kernels, calls cudaAdvice for
// every buffer a kernel reads or writes (operator_advice.hpp) right before
// the launch, and returns once
// the result is complete (the counts it returns are copied back, which
// synchronises). Every kernel is a grid-stride loop, so a launch may be
// resized (by mqx's launch optimizer) without changing the result.
//
// Selection vectors are int32 lineorder (or dimension) row ids; a null
// selection means "all rows 0..n-1". Compaction is by an atomic counter, so
// the order of a selection vector is unspecified: every consumer here
// (probe, gather, aggregation with exact integer sums) is order-insensitive.
#pragma once

#include "ssb/gpu/operator_types.hpp"

#include <cstdint>

namespace mqx::ssb::gpu {

// Selection: writes to `out` the rows r (r = selection[i], or i without a
// selection, for i < n) with column[r] in `accepted`; returns their number.
// `out` holds n entries; `counter` is one device word of scratch.
std::int32_t selectRows(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                        ValueSet accepted, std::int32_t *out, std::uint32_t *counter);

// Gather (projection through a selection vector): out[i] = source[indices[i]].
void gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
            std::int32_t *out);

// Build: inserts keys[r] -> payload[r] (0 without payload) for the n rows of
// `selection` (all rows without one). Keys must be unique (dimension keys).
void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                    const std::int32_t *selection, std::int32_t n, DeviceHashTable table);

// Probe: for each row r of the selection (n entries, or rows 0..n-1) whose
// foreignKeys[r] is in the table, appends r to rowsOut, its position i in the
// selection to positionsOut and the table's payload to payloadOut (both
// optional: null when not needed). Returns the number of matches.
std::int32_t probeHashTable(const std::int32_t *foreignKeys, const std::int32_t *selection,
                            std::int32_t n, DeviceHashTable table, std::int32_t *rowsOut,
                            std::int32_t *positionsOut, std::int32_t *payloadOut,
                            std::uint32_t *counter);

// Dense group-by aggregation: slot = sum_j (keys.column[j][i] - base[j]) *
// stride[j]; sums[slot] += measure(i), counts[slot] += 1 for i < n. The
// measure reads first[i] and second[i] (aligned with the keys). sums and
// counts must be zeroed by the caller (slots entries each).
void aggregateGroups(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                     const std::int32_t *second, std::int32_t n, std::int64_t slots,
                     unsigned long long *sums, unsigned long long *counts);

} // namespace mqx::ssb::gpu
