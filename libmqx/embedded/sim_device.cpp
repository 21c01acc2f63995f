#include "embedded/sim_device.hpp"

#include <chrono>

#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/manager_activity.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/shared_device_budget.hpp"

namespace mqx::embedded {

namespace {

// How long the eviction server waits for this process's manager lock before
// answering another process with nothing (docs/daemon.md: as libmqx.so).
constexpr std::chrono::milliseconds kEvictionPatience{200};

} // namespace

SimDevice::SimDevice(const Config& config, const std::string& clientName, bool joinNode) : config_(config) {
  if (joinNode)
    membership_ = ipc::NodeMembership::connect(nodeOptions(config_), ipc::NodeMembership::Role::Memory, clientName);
  backend_ = std::make_unique<device::SimBackend>(simBackendOptions(config_));
  std::shared_ptr<DeviceBudget> budget;
  if (membership_)
    budget = std::make_shared<ipc::SharedDeviceBudget>(
        membership_, std::make_shared<ipc::AdmissionClient>(membership_, admissionOptions(config_)));
  manager_ = std::make_unique<MemoryManager>(config_, *backend_, std::move(budget));
  // Copy-on-write faults and releases of lazily copied host buffers go to
  // the manager, as in libmqx.so.
  hook::registerHostMemoryManager(manager_.get());
  if (membership_) {
    membership_->setEvictor([manager = manager_.get()](std::size_t bytes, std::uint64_t) {
      return manager->evictForOtherProcess(bytes, kEvictionPatience);
    });
    membership_->setActivitySource(ipc::activitySourceOf(*manager_)); // for mqx top and the metrics
  }
}

SimDevice::~SimDevice() {
  if (membership_) {
    membership_->setEvictor(nullptr); // before the manager goes
    membership_->setActivitySource(nullptr);
  }
  hook::registerHostMemoryManager(nullptr);
  manager_.reset();
  backend_.reset();
  if (membership_) membership_->leave();
}

} // namespace mqx::embedded
