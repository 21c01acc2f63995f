// The tracks (tids) of a process's trace: its threads by their kernel thread
// id, and the device work that mqx issues on its two transfer streams and on
// application streams, by fixed ids above any thread id (pid_max is at most
// 2^22), so that a viewer draws each on a row of its own.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace mqx::trace {

inline constexpr std::uint64_t kToDeviceTrack = 1u << 24;        // loads (H2D copies, fills)
inline constexpr std::uint64_t kToHostTrack = (1u << 24) + 1;    // write-backs (D2H copies)
inline constexpr std::uint64_t kAdmissionTrack = (1u << 24) + 2; // mqxd's admission decisions

inline std::uint64_t currentThreadTrack() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// Stands for the calling thread's track in a TraceSpan: resolved (a gettid
// system call) only when tracing is on, not on every launch.
inline constexpr std::uint64_t kCurrentThreadTrack = ~std::uint64_t{0};

} // namespace mqx::trace
