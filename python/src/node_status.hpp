// NodeStatus: a copy of the node's shared state (NodeState) taken under its
// lock, for `mqx.status()` and `python -m mqx status`.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ipc/node_state.hpp"

namespace mqx::python {

struct ClientStatus {
  std::uint32_t slot = 0;
  std::string state; // waiting, running, memory
  pid_t pid = 0;
  std::string name;
  std::uint64_t arrival = 0;
  std::uint64_t weightedDemand = 0;
  std::uint64_t peakDemand = 0;
  std::uint64_t budgetHeld = 0;
  std::uint64_t observedPeak = 0;
  std::int64_t querySlot = -1; // a memory client: the query it runs for; -1 when none
};

struct NodeStatus {
  std::string instance;
  std::string segment;
  pid_t daemonPid = 0;
  std::uint64_t capacity = 0;
  std::uint64_t used = 0;
  std::uint64_t reclaimedBytes = 0;
  std::uint32_t deadClients = 0;
  std::uint64_t evictionRequestsServed = 0;
  std::uint64_t bytesEvictedForOthers = 0;
  std::vector<ClientStatus> clients; // the records in use, by slot
};

std::string toString(ipc::ClientState state);

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

// Call with the lock held.
NodeStatus snapshot(const ipc::NodeState& node);

// The status of the node of `instance` (the user's own). Throws
// DaemonNotRunning when there is no segment or its daemon is dead.
NodeStatus readNodeStatus(const std::string& instance);

} // namespace mqx::python
