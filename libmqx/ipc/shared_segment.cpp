#include "ipc/shared_segment.hpp"

#include <unistd.h>

#include <boost/interprocess/shared_memory_object.hpp>

#include <algorithm>
#include <cstddef>
#include <new>
#include <stdexcept>

#include "common/log.hpp"

namespace mqx::ipc {
namespace bip = boost::interprocess;

std::unique_ptr<SharedSegment> SharedSegment::create(const IpcNames& names, const std::vector<DeviceEntry>& devices) {
  if (devices.empty() || devices.size() > kMaxDevices)
    throw std::invalid_argument(fmt::format("a node has 1 to {} devices, not {}", kMaxDevices, devices.size()));
  std::string damage;
  if (auto existing = open(names, &damage)) {
    const pid_t previous = existing->state().daemonPid;
    if (previous != getpid() && processAlive(previous))
      throw std::runtime_error("mqxd is already running (pid " + std::to_string(previous) + ", segment " +
                               names.segment + ")");
    log(LogLevel::Warn, "removing the stale segment {} of a daemon (pid {}) that is gone", names.segment, previous);
  } else if (!damage.empty()) {
    log(LogLevel::Warn, "removing the damaged segment {} ({}); not using it", names.segment, damage);
  }
  bip::shared_memory_object::remove(names.segment.c_str());
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, true));
  // Boost's permissions are applied with fchmod, so the umask does not matter.
  bip::shared_memory_object object(bip::create_only, names.segment.c_str(), bip::read_write, bip::permissions(0600));
  object.truncate(static_cast<bip::offset_t>(sizeof(NodeState)));
  result->region_ = bip::mapped_region(object, bip::read_write, 0, sizeof(NodeState));
  NodeState* state = new (result->region_.get_address()) NodeState();
  state->layoutBytes = sizeof(NodeState);
  state->deviceCount = static_cast<std::uint32_t>(devices.size());
  std::copy(devices.begin(), devices.end(), state->devices);
  state->daemonPid = getpid();
  sealHeader(*state); // last: until now a client that opens it finds no valid header
  result->state_ = state;
  return result;
}

std::unique_ptr<SharedSegment> SharedSegment::open(const IpcNames& names, std::string* damage, bool* anotherVersion) {
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, false));
  bip::offset_t size = 0;
  try {
    bip::shared_memory_object object(bip::open_only, names.segment.c_str(), bip::read_write);
    if (!object.get_size(size) || size < static_cast<bip::offset_t>(sizeof(NodeState))) {
      if (damage != nullptr)
        *damage = fmt::format("{} bytes, a node state needs {}", static_cast<long long>(size), sizeof(NodeState));
      // A smaller node state may be an older mqx's: its header tells.
      if (anotherVersion != nullptr && size >= static_cast<bip::offset_t>(offsetof(NodeState, daemonPid))) {
        const bip::mapped_region header(object, bip::read_only, 0, static_cast<std::size_t>(size));
        *anotherVersion = ofAnotherVersion(*static_cast<const NodeState*>(header.get_address()), header.get_size());
      }
      return nullptr;
    }
    result->region_ = bip::mapped_region(object, bip::read_write, 0, sizeof(NodeState));
  } catch (const bip::interprocess_exception&) {
    return nullptr; // no segment
  }
  // A segment of another layout (an older mqxd), caught half-built, or
  // written over is not ours to use.
  auto* state = static_cast<NodeState*>(result->region_.get_address());
  const std::string why = headerDamage(*state, result->region_.get_size());
  if (!why.empty()) {
    // A segment being created (all zero so far) is not damaged, only not ready.
    if (damage != nullptr && state->magic != 0) *damage = why;
    if (anotherVersion != nullptr) *anotherVersion = ofAnotherVersion(*state, result->region_.get_size());
    return nullptr;
  }
  result->state_ = state;
  return result;
}

std::optional<std::string> SharedSegment::damage() const {
  std::string why = headerDamage(*state_, region_.get_size());
  if (why.empty()) return std::nullopt;
  return why;
}

SharedSegment::~SharedSegment() {
  if (owner_) {
    // Clients that still map it keep their mapping; the name goes now.
    bip::shared_memory_object::remove(name_.c_str());
  }
}

} // namespace mqx::ipc
