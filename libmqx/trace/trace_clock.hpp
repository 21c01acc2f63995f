// The trace's clock: CLOCK_MONOTONIC in nanoseconds, the same clock in every
// process of a node, so that per-process trace files merge on one time axis
// (tools/merge-traces).
#pragma once

#include <time.h>

#include <cstdint>

namespace mqx::trace {

inline std::uint64_t traceNow() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

} // namespace mqx::trace
