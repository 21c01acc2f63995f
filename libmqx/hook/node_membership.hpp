// The process's membership of mqxd's node (docs/daemon.md), for the C entry
// points that talk to the node (mqx_node_declare_operator). Joins the node
// on the first call if activation has not (a query declares its plan before
// its first CUDA call). Null when no mqxd runs for this user and instance.
#pragma once

namespace mqx::ipc {
class DaemonClient;
}

namespace mqx::hook {

ipc::DaemonClient* nodeMembership();

} // namespace mqx::hook
