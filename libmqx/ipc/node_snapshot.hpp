// NodeSnapshot: a plain copy of the node's segment (NodeState) at one
// moment, the one reader of the segment that mqxd's metrics and the Python
// status (`mqx status`, `mqx top`) share: a field of the segment that the
// observers show is copied here, once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ipc/node_state.hpp"

namespace mqx::ipc {

// One client record in use.
struct ClientSnapshot {
  std::uint32_t slot = 0;
  ClientState state = ClientState::Free;
  pid_t pid = 0;
  std::string name;
  std::uint64_t arrival = 0;
  std::uint64_t weightedDemand = 0;
  std::uint64_t peakDemand = 0;
  std::uint64_t budgetHeld = 0;
  std::uint64_t observedPeak = 0;
  std::uint32_t querySlot = kNoSlot;
  bool blockedOnMemory = false;
  ClientActivity activity; // a memory client's (zero for queries)
};

struct NodeSnapshot {
  pid_t daemonPid = 0;
  std::uint64_t capacity = 0;
  std::uint64_t usedBytes = 0;
  std::uint64_t reclaimedBytes = 0;
  std::uint32_t deadClients = 0;
  std::uint64_t evictionRequestsServed = 0;
  std::uint64_t bytesEvictedForOthers = 0;
  // The node's totals: the counters of the clients that left or died and
  // of the live ones (they only grow), and the swap use of the live ones.
  ClientActivity activity;
  std::vector<ClientSnapshot> clients; // the records in use, by slot
};

const char* toString(ClientState state); // "free", "waiting", "running", "memory"

// Call with node.lock held.
NodeSnapshot snapshotOf(const NodeState& node);

} // namespace mqx::ipc
