// The process's membership of mqxd's node (docs/daemon.md), for the C entry
// points that talk to the node (mqx_node_declare_operator): the admission
// client of the query this process runs for. Joins the node on the first
// call if activation has not (a query declares its plan before its first
// CUDA call). Null when no mqxd runs for this user and instance.
#pragma once

namespace mqx::ipc {
class AdmissionClient;
}

namespace mqx::hook {

ipc::AdmissionClient* nodeAdmission();

} // namespace mqx::hook
