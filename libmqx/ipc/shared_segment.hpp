// SharedSegment: one mapping of the node's shared-memory segment (a
// Boost.Interprocess shared_memory_object named per user, created 0600)
// holding a NodeState at its start. The daemon creates and, on destruction,
// removes it; clients open it. RAII: the mapping ends with the object.
//
// A plain mapping, not a managed segment: opening a managed segment takes
// Boost's own (non-robust) mutex inside it, which waits for ever in a
// segment overwritten with garbage (docs/hardening.md, "Faults and bad
// inputs tried"). Here nothing in the segment is waited on before its
// header (magic, version, layout size, checksum) is checked.
#pragma once

#include <boost/interprocess/mapped_region.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ipc/ipc_names.hpp"
#include "ipc/node_state.hpp"

namespace mqx::ipc {

class SharedSegment {
public:
  // The daemon's: creates the segment. A segment left by a daemon that is no
  // longer alive (a crash), or a damaged one, is removed first (one log line
  // says which); one whose daemon is alive is a std::runtime_error naming
  // its pid. `devices` (1 to kMaxDevices) is the header's device table.
  static std::unique_ptr<SharedSegment> create(const IpcNames& names, const std::vector<DeviceEntry>& devices);
  // A client's: null when there is no segment or it is not a valid NodeState
  // (no daemon, one being torn down, or a damaged segment: then `damage`,
  // when given, says why in one line, and `anotherVersion` whether it is a
  // node of another mqx rather than garbage).
  static std::unique_ptr<SharedSegment> open(const IpcNames& names, std::string* damage = nullptr,
                                             bool* anotherVersion = nullptr);

  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  NodeState& state() { return *state_; }
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }
  // Why the mapped header is no longer a valid node state (someone wrote
  // over the segment), nullopt while it is.
  std::optional<std::string> damage() const;

private:
  SharedSegment(std::string name, bool owner) : name_(std::move(name)), owner_(owner) {}

  std::string name_;
  bool owner_;
  boost::interprocess::mapped_region region_;
  NodeState* state_ = nullptr;
};

} // namespace mqx::ipc
