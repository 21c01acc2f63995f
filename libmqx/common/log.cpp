#include "common/log.hpp"

#include <unistd.h>

#include <array>
#include <string>

namespace mqx {
namespace {
std::atomic<int> currentLevel{static_cast<int>(LogLevel::Warn)};
constexpr std::array<std::string_view, 5> kNames{"error", "warn", "info", "debug", "trace"};
} // namespace

LogLevel logLevel() noexcept { return static_cast<LogLevel>(currentLevel.load(std::memory_order_relaxed)); }

void setLogLevel(LogLevel level) noexcept { currentLevel.store(static_cast<int>(level), std::memory_order_relaxed); }

void writeLog(LogLevel level, std::string_view message) noexcept {
  // One write(2) per line so that lines of concurrent processes do not
  // interleave.
  std::string line = "mqx[" + std::to_string(::getpid()) + "] " + std::string(kNames[static_cast<int>(level)]) + ": " +
                     std::string(message) + "\n";
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

} // namespace mqx
