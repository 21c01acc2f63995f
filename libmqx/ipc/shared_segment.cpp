#include "ipc/shared_segment.hpp"

#include <unistd.h>

#include <stdexcept>

#include "common/log.hpp"

namespace mqx::ipc {
namespace bip = boost::interprocess;
namespace {

constexpr const char* kStateObject = "NodeState";
// The node state and Boost's own bookkeeping.
constexpr std::size_t kSegmentBytes = sizeof(NodeState) + 64 * 1024;

} // namespace

std::unique_ptr<SharedSegment> SharedSegment::create(const IpcNames& names, std::uint64_t capacity) {
  if (auto existing = open(names)) {
    const pid_t previous = existing->state().daemonPid;
    if (previous != getpid() && processAlive(previous))
      throw std::runtime_error("mqxd is already running (pid " + std::to_string(previous) + ", segment " +
                               names.segment + ")");
    log(LogLevel::Warn, "removing the stale segment {} of a daemon (pid {}) that is gone", names.segment, previous);
  }
  bip::shared_memory_object::remove(names.segment.c_str());
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, true));
  bip::permissions userOnly(0600);
  result->segment_ =
      bip::managed_shared_memory(bip::create_only, names.segment.c_str(), kSegmentBytes, nullptr, userOnly);
  result->state_ = result->segment_.construct<NodeState>(kStateObject)();
  result->state_->capacity = capacity;
  result->state_->daemonPid = getpid();
  return result;
}

std::unique_ptr<SharedSegment> SharedSegment::open(const IpcNames& names) {
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, false));
  try {
    result->segment_ = bip::managed_shared_memory(bip::open_only, names.segment.c_str());
  } catch (const bip::interprocess_exception&) {
    return nullptr;
  }
  // A segment of another layout (an older mqxd) or caught half-built is not
  // ours to use.
  auto [state, count] = result->segment_.find<NodeState>(kStateObject);
  if (state == nullptr || count != 1 || state->magic != kNodeStateMagic || state->version != kNodeStateVersion)
    return nullptr;
  result->state_ = state;
  return result;
}

SharedSegment::~SharedSegment() {
  if (owner_) {
    // Clients that still map it keep their mapping; the name goes now.
    bip::shared_memory_object::remove(name_.c_str());
  }
}

} // namespace mqx::ipc
