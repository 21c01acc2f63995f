#include "ipc/node_state.hpp"

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace mqx::ipc {

std::uint64_t monotonicNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // /proc/<pid>/stat: "pid (comm) S ..."; comm may hold spaces and parentheses,
  // so the state is the field after the last ')'.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true; // no /proc: trust kill()
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return true;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

} // namespace mqx::ipc
