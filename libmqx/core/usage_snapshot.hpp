// The manager's usage as of the last time it left a call, for readers that
// must never wait for the manager's lock (MemoryManager::tryUsage).
//
// Why: a process that launches and evicts holds its manager's lock most of
// the time, so a reader that only tries the lock publishes its counters
// seconds late, and mqxd's room for one more then charged the evictions of
// three queries running to the two left after one ended (H200, 9d08806; see
// AdaptiveOptions::pagingSettleSeconds). A reader that finds the lock busy
// asks for a snapshot; the manager stores one as it next leaves a call. The
// hot path pays one relaxed load when nobody asked.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>

#include "core/statistics.hpp"

namespace mqx {

// The manager's counters and its swap buffer's use at one moment.
struct ManagerUsage {
  Statistics statistics;
  std::size_t swapUsedBytes = 0;     // swap slots handed out
  std::size_t swapReservedBytes = 0; // swap memory held from the system
  std::size_t swapLentBytes = 0;     // of it, host blocks lent by mqxd's pool (HostBlockSource)
};

class UsageSnapshot {
public:
  // The last usage stored (nullopt before the first), and a request for a
  // fresh one at the manager's next exit. Never waits for the manager.
  [[nodiscard]] std::optional<ManagerUsage> readAndRequest() {
    requested_.store(true, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    return usage_;
  }

  // Whether a reader asked since the last store: the manager checks this as
  // it leaves a call, with its lock still held.
  [[nodiscard]] bool requested() const { return requested_.load(std::memory_order_relaxed); }

  void store(const ManagerUsage& usage) {
    requested_.store(false, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    usage_ = usage;
  }

private:
  std::atomic<bool> requested_{false};
  std::mutex mutex_; // only for the copy in and out; never held with a wait
  std::optional<ManagerUsage> usage_;
};

} // namespace mqx
