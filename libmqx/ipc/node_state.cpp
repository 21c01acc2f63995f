#include "ipc/node_state.hpp"

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace mqx::ipc {

std::uint64_t monotonicNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

namespace {

// The state letter of /proc/<pid>/stat ("pid (comm) S ..."; comm may hold
// spaces and parentheses, so the state is the field after the last ')'), or
// 0 when it cannot be read.
char procState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return 0;
  return text[close + 2];
}

void mix(std::uint64_t* hash, std::uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) {
    *hash ^= (value >> (8 * byte)) & 0xff;
    *hash *= 0x100000001b3ull;
  }
}

} // namespace

std::uint64_t headerChecksumOf(const NodeState& node) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  mix(&hash, node.magic);
  mix(&hash, node.version);
  mix(&hash, node.layoutBytes);
  mix(&hash, static_cast<std::uint64_t>(node.daemonPid));
  mix(&hash, node.capacity);
  return hash;
}

void sealHeader(NodeState& node) { node.headerChecksum = headerChecksumOf(node); }

std::string headerDamage(const NodeState& node, std::size_t mappedBytes) {
  if (mappedBytes < sizeof(NodeState))
    return fmt::format("{} bytes, a node state needs {}", mappedBytes, sizeof(NodeState));
  if (node.magic != kNodeStateMagic) return fmt::format("bad magic {:#010x}", node.magic);
  if (node.version != kNodeStateVersion)
    return fmt::format("version {}, this build reads {}", node.version, kNodeStateVersion);
  if (node.layoutBytes != sizeof(NodeState))
    return fmt::format("layout of {} bytes, this build's is {}", node.layoutBytes, sizeof(NodeState));
  if (node.headerChecksum != headerChecksumOf(node)) return "header checksum mismatch";
  return {};
}

bool ofAnotherVersion(const NodeState& node, std::size_t mappedBytes) {
  return mappedBytes >= sizeof(node.magic) + sizeof(node.version) + sizeof(node.layoutBytes) &&
         node.magic == kNodeStateMagic &&
         (node.version != kNodeStateVersion || node.layoutBytes != sizeof(NodeState));
}

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const char state = procState(pid);
  return state != 'Z' && state != 'X'; // 0, no /proc: trust kill()
}

bool processStopped(pid_t pid) {
  if (pid <= 0) return false;
  const char state = procState(pid);
  return state == 'T' || state == 't';
}

} // namespace mqx::ipc
