// SharedSegment: one mapping of the node's shared-memory segment (a
// Boost.Interprocess managed segment named per user, created 0600) holding a
// NodeState. The daemon creates and, on destruction, removes it; clients
// open it. RAII: the mapping ends with the object.
#pragma once

#include <boost/interprocess/managed_shared_memory.hpp>

#include <memory>
#include <string>

#include "ipc/ipc_names.hpp"
#include "ipc/node_state.hpp"

namespace mqx::ipc {

class SharedSegment {
public:
  // The daemon's: creates the segment. A segment left by a daemon that is no
  // longer alive (a crash) is removed first; one whose daemon is alive is a
  // std::runtime_error naming its pid.
  static std::unique_ptr<SharedSegment> create(const IpcNames& names, std::uint64_t capacity);
  // A client's: null when there is no segment or it is not a valid NodeState
  // (no daemon, or one being torn down).
  static std::unique_ptr<SharedSegment> open(const IpcNames& names);

  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  NodeState& state() { return *state_; }
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }

private:
  SharedSegment(std::string name, bool owner) : name_(std::move(name)), owner_(owner) {}

  std::string name_;
  bool owner_;
  boost::interprocess::managed_shared_memory segment_;
  NodeState* state_ = nullptr;
};

} // namespace mqx::ipc
