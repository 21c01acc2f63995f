// The process's membership of mqxd's node (docs/daemon.md), for the C entry
// points that talk to the node (mqx_node_declare_operator). Null when the
// process manages its device memory alone.
#pragma once

namespace mqx::ipc {
class DaemonClient;
}

namespace mqx::hook {

ipc::DaemonClient* nodeMembership();

} // namespace mqx::hook
