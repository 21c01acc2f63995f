// NodeStatus: a copy of the node's shared state (NodeState) taken under its
// lock (ipc::NodeSnapshot), for `mqx.status()` and `python -m mqx status`.
#pragma once

#include <chrono>
#include <string>

#include "ipc/node_snapshot.hpp"

namespace mqx::python {

// The node's segment as ipc::snapshotOf copies it (one reader for mqxd's
// metrics and for this), and where it was read.
struct NodeStatus {
  std::string instance;
  std::string segment;
  ipc::NodeSnapshot node;
};

// Takes the node's lock, waiting at most `timeout`: a status must never hang,
// even when a live process keeps the lock. Throws MqxError past it.
class TimedNodeLock {
public:
  TimedNodeLock(ipc::NodeState& node, std::chrono::milliseconds timeout);
  ~TimedNodeLock() { node_.lock.unlock(); }
  TimedNodeLock(const TimedNodeLock&) = delete;
  TimedNodeLock& operator=(const TimedNodeLock&) = delete;

private:
  ipc::NodeState& node_;
};

// The status of the node of `instance` (the user's own). Throws
// DaemonNotRunning when there is no segment or its daemon is dead.
NodeStatus readNodeStatus(const std::string& instance);

} // namespace mqx::python
