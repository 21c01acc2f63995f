// Logging to stderr with a "mqx:" prefix, filtered by the configured level.
// The level is an atomic so that every thread of a host program can log.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string_view>

namespace mqx {

enum class LogLevel : int { Error = 0, Warn = 1, Info = 2, Debug = 3, Trace = 4 };

LogLevel logLevel() noexcept;
void setLogLevel(LogLevel level) noexcept;
void writeLog(LogLevel level, std::string_view message) noexcept;

template <typename... Args> void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (static_cast<int>(level) > static_cast<int>(logLevel())) return;
  try {
    writeLog(level, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    // Logging must never take the host program down.
  }
}

} // namespace mqx
