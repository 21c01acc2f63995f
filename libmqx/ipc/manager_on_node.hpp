// ManagerOnNode: a MemoryManager as a member of mqxd's node, assembled the one
// way every runtime does it (libmqx.so's Runtime, SimDevice, and the test and
// benchmark programs that assemble their own). With a membership:
//  - the manager's device budget is the node's (SharedDeviceBudget), and the
//    launches' footprints go to the query's AdmissionClient (observed
//    demand, paper §5);
//  - the membership serves other processes' eviction requests with the
//    manager, evicting the region that global victim selection names first
//    (paper §6; docs/daemon.md);
//  - the manager's activity is published in the client record (mqx top, the
//    metrics).
// Without a membership the manager works alone on its own budget.
//
// RAII: detach() or the destructor stops serving eviction requests and
// publishes the manager's last counters before the manager goes. The
// membership itself is left by its owner.
#pragma once

#include <memory>

#include "core/memory_manager.hpp"
#include "device/device_backend.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::ipc {

class ManagerOnNode {
public:
  // `membership` (a memory client's) may be null: alone. `queryDemand` may
  // be null: the launches' footprints are not reported. Throws what the
  // manager's constructor throws.
  ManagerOnNode(const ManagerOptions& options, device::DeviceBackend& backend,
                std::shared_ptr<NodeMembership> membership, std::shared_ptr<AdmissionClient> queryDemand);
  ~ManagerOnNode();
  ManagerOnNode(const ManagerOnNode&) = delete;
  ManagerOnNode& operator=(const ManagerOnNode&) = delete;

  MemoryManager& manager() { return *manager_; }
  // Whether the device budget is the node's.
  bool onNode() const { return membership_ != nullptr; }
  // Stops serving the node's eviction requests and publishes the manager's
  // last counters (idempotent): from now on the record's activity no longer
  // changes. The manager keeps drawing on the node's budget.
  void detach();

private:
  std::shared_ptr<NodeMembership> membership_;
  std::unique_ptr<MemoryManager> manager_;
  bool attached_ = false;
};

} // namespace mqx::ipc
