#include "ipc/node_state.hpp"

#include <signal.h>
#include <strings.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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
  mix(&hash, node.deviceCount);
  for (const DeviceEntry& device : node.devices) {
    for (const char c : device.identity)
      mix(&hash, static_cast<unsigned char>(c));
    mix(&hash, device.capacity);
  }
  return hash;
}

std::string NodeState::identityOf(std::uint32_t device) const {
  if (device >= deviceCount || device >= kMaxDevices) return {};
  return std::string(devices[device].identity, strnlen(devices[device].identity, kDeviceIdentityBytes));
}

std::optional<std::uint32_t> findDevice(const NodeState& node, const std::string& name) {
  const std::uint32_t count = std::min(node.deviceCount, kMaxDevices);
  if (count == 0) return std::nullopt;
  if (name.empty()) return 0;
  for (std::uint32_t i = 0; i < count; ++i)
    if (strcasecmp(node.identityOf(i).c_str(), name.c_str()) == 0) return i;
  if (name.size() <= 2 && name.find_first_not_of("0123456789") == std::string::npos) {
    const auto index = static_cast<std::uint32_t>(std::stoul(name));
    if (index < count) return index;
  }
  return std::nullopt;
}

std::string listDevices(const NodeState& node) {
  std::string text;
  for (std::uint32_t i = 0; i < std::min(node.deviceCount, kMaxDevices); ++i)
    text += fmt::format("{}{} {} ({} MiB)", i == 0 ? "" : ", ", i, node.identityOf(i), node.devices[i].capacity >> 20);
  return text;
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
  if (node.deviceCount == 0 || node.deviceCount > kMaxDevices)
    return fmt::format("{} devices, a node has 1 to {}", node.deviceCount, kMaxDevices);
  return {};
}

bool ofAnotherVersion(const NodeState& node, std::size_t mappedBytes) {
  return mappedBytes >= sizeof(node.magic) + sizeof(node.version) + sizeof(node.layoutBytes) &&
         node.magic == kNodeStateMagic && (node.version != kNodeStateVersion || node.layoutBytes != sizeof(NodeState));
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

pid_t processOfThread(pid_t thread) {
  if (thread <= 0) return thread;
  std::ifstream status("/proc/" + std::to_string(thread) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("Tgid:")) return static_cast<pid_t>(std::strtol(line.c_str() + 5, nullptr, 10));
  return thread;
}

} // namespace mqx::ipc
