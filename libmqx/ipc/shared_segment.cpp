#include "ipc/shared_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>

#include "common/log.hpp"

namespace mqx::ipc {
namespace {

std::string pathOf(const std::string& segment) { return "/dev/shm/" + segment; }

// Opens the segment read-write and checks whose it is. An invalid
// descriptor when there is none (ENOENT) or it must not be used (`problem`
// says why).
FileDescriptor openChecked(const std::string& segment, std::string* problem) {
  if (segment.empty()) return {};
  FileDescriptor object(::shm_open(segment.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0));
  const std::string what = "the node's segment " + pathOf(segment);
  if (!object.valid()) {
    if (errno != ENOENT)
      *problem = fmt::format("{} cannot be opened ({}): not this user's; not using it", what, std::strerror(errno));
    return {};
  }
  struct stat status {};
  if (::fstat(object.get(), &status) != 0) {
    *problem = fmt::format("{}: fstat: {}", what, std::strerror(errno));
    return {};
  }
  *problem = foreignObjectProblem(status, what);
  if (!problem->empty()) return {};
  return object;
}

off_t sizeOf(int descriptor) {
  struct stat status {};
  return ::fstat(descriptor, &status) == 0 ? status.st_size : 0;
}

} // namespace

std::string foreignObjectProblem(const struct stat& status, const std::string& what) {
  if (status.st_uid != ::geteuid())
    return fmt::format("{} belongs to {}, not to this user: not using it", what, describeOwner(status.st_uid));
  if ((status.st_mode & 022) != 0)
    return fmt::format("{} has mode {:04o}: others may write it; not using it", what, status.st_mode & 07777);
  return {};
}

std::unique_ptr<SharedSegment> SharedSegment::create(const IpcNames& names, const std::vector<DeviceEntry>& devices) {
  if (devices.empty() || devices.size() > kMaxDevices)
    throw std::invalid_argument(fmt::format("a node has 1 to {} devices, not {}", kMaxDevices, devices.size()));
  if (!names.problem.empty()) throw std::runtime_error(names.problem);
  std::string damage;
  bool notOurs = false;
  if (auto existing = open(names, &damage, nullptr, &notOurs)) {
    const pid_t previous = existing->state().daemonPid;
    if (previous != getpid() && processAlive(previous))
      throw std::runtime_error("mqxd is already running (pid " + std::to_string(previous) + ", segment " +
                               names.segment + ")");
    log(LogLevel::Warn, "removing the stale segment {} of a daemon (pid {}) that is gone", names.segment, previous);
  } else if (notOurs) {
    throw std::runtime_error(damage + " (mqxd never removes another user's object)");
  } else if (!damage.empty()) {
    log(LogLevel::Warn, "removing the damaged segment {} ({}); not using it", names.segment, damage);
  }
  ::shm_unlink(names.segment.c_str()); // ours (checked above) or none
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, true));
  result->object_ =
      FileDescriptor(::shm_open(names.segment.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!result->object_.valid())
    throw std::runtime_error(fmt::format("cannot create {}: {}", pathOf(names.segment), std::strerror(errno)));
  result->owner_ = true;
  // 0600 whatever the umask.
  if (::fchmod(result->object_.get(), 0600) != 0 ||
      ::ftruncate(result->object_.get(), static_cast<off_t>(sizeof(NodeState))) != 0)
    throw std::runtime_error(fmt::format("cannot size {}: {}", pathOf(names.segment), std::strerror(errno)));
  result->mapping_ = ::mmap(nullptr, sizeof(NodeState), PROT_READ | PROT_WRITE, MAP_SHARED, result->object_.get(), 0);
  if (result->mapping_ == MAP_FAILED) {
    result->mapping_ = nullptr;
    throw std::runtime_error(fmt::format("cannot map {}: {}", pathOf(names.segment), std::strerror(errno)));
  }
  NodeState* state = new (result->mapping_) NodeState();
  state->layoutBytes = sizeof(NodeState);
  state->deviceCount = static_cast<std::uint32_t>(devices.size());
  std::copy(devices.begin(), devices.end(), state->devices);
  state->daemonPid = getpid();
  sealHeader(*state); // last: until now a client that opens it finds no valid header
  result->state_ = state;
  return result;
}

std::unique_ptr<SharedSegment> SharedSegment::open(const IpcNames& names, std::string* damage, bool* anotherVersion,
                                                   bool* notOurs) {
  std::string problem = names.problem;
  FileDescriptor object = problem.empty() ? openChecked(names.segment, &problem) : FileDescriptor();
  if (!object.valid()) {
    if (damage != nullptr) *damage = problem;
    if (notOurs != nullptr) *notOurs = !problem.empty();
    return nullptr;
  }
  const off_t size = sizeOf(object.get());
  if (size < static_cast<off_t>(sizeof(NodeState))) {
    if (damage != nullptr)
      *damage = fmt::format("{} bytes, a node state needs {}", static_cast<long long>(size), sizeof(NodeState));
    // A smaller node state may be an older mqx's: its header tells.
    if (anotherVersion != nullptr && size >= static_cast<off_t>(offsetof(NodeState, daemonPid))) {
      void* header = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED, object.get(), 0);
      if (header != MAP_FAILED) {
        *anotherVersion = ofAnotherVersion(*static_cast<const NodeState*>(header), static_cast<std::size_t>(size));
        ::munmap(header, static_cast<std::size_t>(size));
      }
    }
    return nullptr;
  }
  std::unique_ptr<SharedSegment> result(new SharedSegment(names.segment, false));
  result->mapping_ = ::mmap(nullptr, sizeof(NodeState), PROT_READ | PROT_WRITE, MAP_SHARED, object.get(), 0);
  if (result->mapping_ == MAP_FAILED) {
    result->mapping_ = nullptr;
    return nullptr;
  }
  result->object_ = std::move(object);
  // A segment of another layout (an older mqxd), caught half-built, or
  // written over is not ours to use.
  auto* state = static_cast<NodeState*>(result->mapping_);
  const std::string why = headerDamage(*state, sizeof(NodeState));
  if (!why.empty()) {
    // A segment being created (all zero so far) is not damaged, only not ready.
    if (damage != nullptr && state->magic != 0) *damage = why;
    if (anotherVersion != nullptr) *anotherVersion = ofAnotherVersion(*state, sizeof(NodeState));
    return nullptr;
  }
  result->state_ = state;
  return result;
}

std::optional<std::string> SharedSegment::damage() const {
  // The size first: reading a page past a truncated object's end is SIGBUS.
  const off_t size = sizeOf(object_.get());
  if (size < static_cast<off_t>(sizeof(NodeState)))
    return fmt::format("shrunk to {} bytes, a node state needs {}", static_cast<long long>(size), sizeof(NodeState));
  std::string why = headerDamage(*state_, sizeof(NodeState));
  if (why.empty()) return std::nullopt;
  return why;
}

SharedSegment::~SharedSegment() {
  if (mapping_ != nullptr) ::munmap(mapping_, sizeof(NodeState));
  if (owner_) {
    // Clients that still map it keep their mapping; the name goes now, if
    // it is still this segment's (checked by inode: never another's).
    struct stat mine {
    }, named{};
    const FileDescriptor current(::shm_open(name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));
    if (current.valid() && ::fstat(object_.get(), &mine) == 0 && ::fstat(current.get(), &named) == 0 &&
        mine.st_ino == named.st_ino && mine.st_dev == named.st_dev)
      ::shm_unlink(name_.c_str());
  }
}

} // namespace mqx::ipc
