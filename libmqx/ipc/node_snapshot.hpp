// NodeSnapshot: a plain copy of the node's segment (NodeState) at one
// moment, the one reader of the segment that mqxd's metrics and the Python
// status (`mqx status`, `mqx top`) share: a field of the segment that the
// observers show is copied here, once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config_choices.hpp"
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
  // The node device: a memory client's; a query's once placed (or asked
  // for), else kAnyDevice and "".
  std::uint32_t device = kAnyDevice;
  std::string deviceIdentity;
  bool blockedOnMemory = false;
  ClientActivity activity; // a memory client's (zero for queries)
};

// One device of the node (docs/daemon.md, "Several GPUs").
struct DeviceSnapshot {
  std::uint32_t index = 0;
  std::string identity; // a GPU's UUID or "sim-<n>"
  std::uint64_t capacity = 0;
  std::uint64_t usedBytes = 0;      // what the memory clients on it hold
  std::uint32_t runningQueries = 0; // admitted queries placed on it
  std::uint32_t waitingQueries = 0; // waiting queries that asked for it (mqx-run --device)
  std::uint32_t memoryClients = 0;
  std::uint64_t runningWeightedDemand = 0; // of the running queries placed on it
};

struct NodeSnapshot {
  pid_t daemonPid = 0;
  std::uint64_t capacity = 0;  // of every device together
  std::uint64_t usedBytes = 0; // on every device together
  std::vector<DeviceSnapshot> devices;
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

// Why the query waiting in `slot` is not admitted yet and for whom, in one
// line for mqx-run's stderr (docs/daemon.md, "Waiting for admission"): its
// demand against what the running queries leave free under the admission
// policy on each device it may run on (mqxd counts a running query with the
// larger of its demand and what its processes hold), the earlier queries it
// waits behind, and the running queries and memory clients holding the
// memory there, by name, pid, demand and bytes held, a stopped one marked so
// (processStopped: it holds its memory until SIGCONT). Reads /proc: call
// without the node lock.
std::string describeAdmissionWait(const NodeSnapshot& node, std::uint32_t slot, AdmissionKind admission, unsigned fixN);

} // namespace mqx::ipc
