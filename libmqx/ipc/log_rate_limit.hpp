// LogRateLimit: at most one log line per interval for a kind of event that
// anyone may cause in bulk (a queue writable by every process of the user
// gets garbage), with the count of the events not logged since the last line
// (docs/hardening.md: "at most one line a second"). Thread-safe: a queue may
// be read by more than one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

namespace mqx::ipc {

class LogRateLimit {
public:
  explicit LogRateLimit(std::chrono::milliseconds interval = std::chrono::seconds(1)) : interval_(interval) {}

  // For one event: nullopt when it must not be logged (it is counted), else
  // the number of events not logged since the last line.
  std::optional<std::uint64_t> admit() {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (logged_ && now - lastLine_ < interval_) {
      ++suppressed_;
      return std::nullopt;
    }
    logged_ = true;
    lastLine_ = now;
    const std::uint64_t suppressed = suppressed_;
    suppressed_ = 0;
    return suppressed;
  }

private:
  std::mutex mutex_;
  std::chrono::milliseconds interval_;
  bool logged_ = false;
  std::chrono::steady_clock::time_point lastLine_{};
  std::uint64_t suppressed_ = 0;
};

} // namespace mqx::ipc
