#include "embedded/sim_device.hpp"

#include <chrono>

#include "embedded/backend_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/daemon_client.hpp"
#include "ipc/manager_activity.hpp"

namespace mqx::embedded {

namespace {

// How long the eviction server waits for this process's manager lock before
// answering another process with nothing (docs/daemon.md: as libmqx.so).
constexpr std::chrono::milliseconds kEvictionPatience{200};

} // namespace

SimDevice::SimDevice(const Config& config, const std::string& clientName, bool joinNode) : config_(config) {
  if (joinNode) client_ = ipc::DaemonClient::connect(config_, ipc::DaemonClient::Role::Memory, clientName);
  backend_ = std::make_unique<device::SimBackend>(simBackendOptions(config_));
  manager_ = std::make_unique<MemoryManager>(config_, *backend_, client_ ? client_->budget() : nullptr);
  // Copy-on-write faults and releases of lazily copied host buffers go to
  // the manager, as in libmqx.so.
  hook::registerHostMemoryManager(manager_.get());
  if (client_) {
    client_->setEvictor([manager = manager_.get()](std::size_t bytes) {
      return manager->evictForOtherProcess(bytes, kEvictionPatience);
    });
    client_->setActivitySource(ipc::activitySourceOf(*manager_)); // for mqx top and the metrics
  }
}

SimDevice::~SimDevice() {
  if (client_) {
    client_->setEvictor(nullptr); // before the manager goes
    client_->setActivitySource(nullptr);
  }
  hook::registerHostMemoryManager(nullptr);
  manager_.reset();
  backend_.reset();
  if (client_) client_->leave();
}

} // namespace mqx::embedded
