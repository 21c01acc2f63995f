// The process's membership of mqxd's node (docs/daemon.md), for the C entry
// points that talk to the node (mqx_node_declare_operator, cuInit): the admission
// client of the query this process runs for. Joins the node on the first
// call if activation has not (a query declares its plan before its first
// CUDA call). Null when no mqxd runs for this user and instance.
#pragma once

namespace mqx::ipc {
class AdmissionClient;
}

namespace mqx::hook {

ipc::AdmissionClient* nodeAdmission();

// A process of a query that mqx-run started before mqxd admitted it waits
// here, once, before the driver starts (cuInit, and the advice API's join):
// until the query is admitted, then the driver is shown the device mqxd
// placed it on (ipc/query_admission_gate.hpp). False when the query will not
// be admitted: the process must not use the GPU. True at once for any other
// process.
bool passQueryAdmissionGate();

} // namespace mqx::hook
