// SharedSegment: one mapping of the node's shared-memory segment (a POSIX
// shared memory object named per user, created 0600) holding a NodeState at
// its start. The daemon creates and, on destruction, removes it; clients
// open it. RAII: the mapping and its descriptor end with the object.
//
// A plain mapping, not a managed segment: opening a managed segment takes
// Boost's own (non-robust) mutex inside it, which waits for ever in a
// segment overwritten with garbage (docs/hardening.md, "Faults and bad
// inputs tried"). Here nothing in the segment is waited on before its
// header (magic, version, layout size, checksum) is checked, and nothing is
// used before its owner and mode are: an object of another user, or one
// others may write, at the node's name is refused (never used, never
// removed).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/node_state.hpp"

namespace mqx::ipc {

// Why an object at one of the node's names must not be used: it belongs to
// another user, or the group or others may write it. Empty when it is this
// user's own and private. `what` names it in the message ("the node's
// segment /dev/shm/...").
[[nodiscard]] std::string foreignObjectProblem(const struct stat& status, const std::string& what);

class SharedSegment {
public:
  // The daemon's: creates the segment. A segment left by a daemon that is no
  // longer alive (a crash), or a damaged one, is removed first (one log line
  // says which); one whose daemon is alive is a std::runtime_error naming
  // its pid, and so is one of another user (naming the owner; not removed).
  // `devices` (1 to kMaxDevices) is the header's device table.
  static std::unique_ptr<SharedSegment> create(const IpcNames& names, const std::vector<DeviceEntry>& devices);
  // A client's: null when there is no segment or it is not a valid NodeState
  // (no daemon, one being torn down, or a damaged segment: then `damage`,
  // when given, says why in one line, and `anotherVersion` whether it is a
  // node of another mqx rather than garbage), or it is not this user's own
  // (`notOurs`, with `damage` naming the owner or the mode).
  static std::unique_ptr<SharedSegment> open(const IpcNames& names, std::string* damage = nullptr,
                                             bool* anotherVersion = nullptr, bool* notOurs = nullptr);

  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  NodeState& state() { return *state_; }
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }
  // Why the segment is no longer a valid node state (someone wrote over it
  // or shrank it), nullopt while it is. The object's size is checked first
  // (fstat), so a truncated segment is reported, not touched (SIGBUS).
  std::optional<std::string> damage() const;

private:
  SharedSegment(std::string name, bool owner) : name_(std::move(name)), owner_(owner) {}

  std::string name_;
  bool owner_;
  FileDescriptor object_;
  void* mapping_ = nullptr;
  NodeState* state_ = nullptr;
};

} // namespace mqx::ipc
