// Each component's options as the configuration states them. Components take
// their own options, not the whole Config (STYLE.md section 3): they are
// built here, once, for every place that assembles a runtime (libmqx.so's
// Runtime, SimDevice, mqx-run, mqx.Client, and the test and benchmark
// programs that assemble their own).
#pragma once

#include "config/config.hpp"
#include "core/manager_options.hpp"
#include "device/sim/sim_backend.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::embedded {

// The memory manager's: [memory], [policy], [optimizations], [trace] and
// daemon.eviction_timeout_ms.
ManagerOptions managerOptions(const Config& config);

// The [sim] section: capacity, granularity, bandwidths, realtime.
device::SimBackendOptions simBackendOptions(const Config& config);

// daemon.instance and daemon.eviction_timeout_ms: which node to join (its
// device left to the caller: "" is the node's first, or mqxd's placement
// for a query).
ipc::NodeOptions nodeOptions(const Config& config);

// A process on the simulated device: nodeOptions and sim.device, the node
// device it draws on (mqx-run sets MQX_SIM_DEVICE to the one mqxd placed the
// query on; docs/daemon.md, "Several GPUs").
ipc::NodeOptions simNodeOptions(const Config& config);

// daemon.admission, daemon.admission_fix_n and
// daemon.demand_report_interval_ms.
ipc::AdmissionOptions admissionOptions(const Config& config);

} // namespace mqx::embedded
