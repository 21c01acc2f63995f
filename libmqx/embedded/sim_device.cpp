#include "embedded/sim_device.hpp"

#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::embedded {

SimDevice::SimDevice(const Config& config, const std::string& clientName, bool joinNode) : config_(config) {
  if (joinNode)
    membership_ = ipc::NodeMembership::connect(simNodeOptions(config_), ipc::NodeMembership::Role::Memory, clientName);
  backend_ = std::make_unique<device::SimBackend>(simBackendOptions(config_));
  // As libmqx.so's runtime: the node's budget, its eviction requests served
  // (the region global victim selection names first), the activity published.
  manager_ = std::make_unique<ipc::ManagerOnNode>(
      managerOptions(config_), *backend_, membership_,
      membership_ ? std::make_shared<ipc::AdmissionClient>(membership_, admissionOptions(config_)) : nullptr);
  // Copy-on-write faults and releases of lazily copied host buffers go to
  // the manager, as in libmqx.so.
  hook::registerHostMemoryManager(&manager_->manager());
}

SimDevice::~SimDevice() {
  manager_->detach(); // before the manager goes
  hook::registerHostMemoryManager(nullptr);
  manager_.reset();
  backend_.reset();
  if (membership_) membership_->leave();
}

MemoryManager& SimDevice::manager() { return manager_->manager(); }

std::string SimDevice::nodeDevice() const {
  return membership_ ? membership_->node().identityOf(membership_->device()) : std::string();
}

} // namespace mqx::embedded
