// SimDevice: the simulated device as an in-process runtime. What libmqx.so is
// to a CUDA process (configuration, membership of mqxd's node when one runs,
// a device backend, the memory manager, the host-memory hooks for
// copy-on-write), bundled for a program that runs its kernels on the
// simulated device itself (docs/architecture.md decision 12: the sim backend runs
// the same core, daemon and several processes included, and is the embedded
// default on machines without a GPU).
//
// The program registers its kernels with backend() (host functions with
// their parameter layout) and calls manager() as the interposer would:
// allocate, copy, advise, launch. RAII: the destructor stops serving the
// node's eviction requests, unregisters the host-memory hooks, destroys the
// manager (which frees its device memory and lifts write protection) and
// leaves the node, in that order.
//
// One SimDevice per process: the host-memory hooks serve one manager. Keep
// every host buffer that was copied to the device alive until the SimDevice
// is gone: a process that also has libmqx.so preloaded (mqx-run on a CUDA
// build) routes free() to libmqx.so's hook, which does not know this
// manager, so only this destructor saves what a lazy copy still needs.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"

namespace mqx::ipc {
class ManagerOnNode;
class NodeMembership;
} // namespace mqx::ipc

namespace mqx::embedded {

class SimDevice {
public:
  // Joins mqxd's node (as a memory client named `clientName`) when a daemon
  // runs for this user and daemon.instance and `joinNode` is set; the device
  // budget is then that of the node device sim.device names (the node's
  // first when ""), shared with the other processes on it. Otherwise the
  // process works alone with memory.device_memory_limit (or sim.capacity).
  // Throws std::runtime_error when the node refuses the process (full, or no
  // such device: ipc::UnknownDevice).
  SimDevice(const Config& config, const std::string& clientName, bool joinNode = true);
  ~SimDevice();
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  MemoryManager& manager();
  device::SimBackend& backend() { return *backend_; }
  const Config& config() const { return config_; }
  // Whether the device budget is the node's (a daemon runs and was joined).
  bool onNode() const { return membership_ != nullptr; }
  // The node device it draws on ("sim-1"), "" when alone.
  std::string nodeDevice() const;

private:
  Config config_;
  std::shared_ptr<ipc::NodeMembership> membership_;
  std::unique_ptr<device::SimBackend> backend_;
  std::unique_ptr<ipc::ManagerOnNode> manager_;
};

} // namespace mqx::embedded
