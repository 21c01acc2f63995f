// The activity a process's MemoryManager publishes in its client record
// (ClientActivity, for `mqx top`, `mqx status` and mqxd's metrics). Here, on
// the IPC side, so that the core stays free of the node's layout.
#pragma once

#include "core/memory_manager.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/node_state.hpp"

namespace mqx::ipc {

ClientActivity activityOf(const ManagerUsage& usage);

// What NodeMembership::setActivitySource takes for `manager` (which must
// outlive it: remove the source before the manager goes). Never blocks on
// the manager's lock (MemoryManager::tryUsage: while it is busy, the counters
// as the manager last left a call after a reader asked).
NodeMembership::ActivitySource activitySourceOf(const MemoryManager& manager);

} // namespace mqx::ipc
