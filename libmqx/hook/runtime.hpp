// Runtime: the one piece of global mutable state of libmqx.so. It owns the
// real driver's entry points, the configuration, the process's membership
// of mqxd's node, and for each device the process manages a CUDA backend and
// a MemoryManager (docs/interposer.md, "Several devices"), and knows whether
// this process is managed at all.
//
// Start-up (start()) is one path, run once by whichever entry comes first:
// cuInit, an allocation-like call, or the advice API. It reads the
// configuration (the only read: a bad one makes the process Failed, with one
// error line naming the key), then, for a query started before its
// admission, waits at the admission gate (ipc/query_admission_gate.hpp)
// before the driver starts. The first node join or activation registers the
// one exit handler (exitHandler()).
//
// States: Pending (nothing decided yet) -> Active (a manager exists) or
// PassThrough (no driver, no GPU, no usable device: every call goes to the
// driver unchanged, said once in the log) or Failed (bad configuration:
// managed entry points fail with CUDA_ERROR_NOT_INITIALIZED, said once).
// Activation happens on the first allocation-like call made with a context
// current (cudart's primary context, or the driver API program's own); each
// further device is activated by the first allocation-like call made while
// one of its contexts is current.
//
// The object is created on first use and never destroyed: hooks can run
// during exit, after static destructors.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "config/config.hpp"
#include "core/device_managers.hpp"
#include "core/memory_manager.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/cuda_launch_tuning.hpp"
#include "device/cuda/driver_api.hpp"
#include "hook/memory_pools.hpp"
#include "hook/program_allocations.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/memory_export.hpp"

namespace mqx::ipc {
class AdmissionClient;
class NodeMembership;
} // namespace mqx::ipc

namespace mqx::hook {

class Runtime {
public:
  enum class State { Pending, Active, PassThrough, Failed };

  static Runtime& instance();

  // The real driver, loaded on first use; nullptr when libcuda.so.1 cannot be
  // loaded (then the process is passed through).
  const device::cuda::DriverApi* driver();

  // One managed device: its backend (in the context that was current when
  // it was activated) and its manager.
  struct ManagedDevice {
    device::cuda::CudaBackend* backend = nullptr;
    MemoryManager* manager = nullptr;
    // Launch tuning of resizable kernels on this device, when mqxd runs.
    device::cuda::CudaLaunchTuning* tuning = nullptr;
  };

  // The managers, one per managed device. Lock-free: the hot path.
  const DeviceManagers& managers() const noexcept { return managers_; }
  // The manager whose region holds `address`, or nullptr.
  MemoryManager* owner(DevicePtr address) const { return managers_.owner(address); }
  // The manager that watches host memory (copy-on-write): the first device's.
  // Non-null exactly when some device is managed.
  MemoryManager* hostManager() const noexcept { return managers_.first(); }
  // The managed device of the calling thread's current context, or nullptr
  // values (no context, or a device not managed). One driver call when the
  // process sees more than one device, none otherwise.
  ManagedDevice current() const noexcept;
  // Device `ordinal`, or nullptr values.
  ManagedDevice device(int ordinal) const noexcept;
  // The device whose manager is `manager`.
  ManagedDevice deviceOf(const MemoryManager* manager) const noexcept { return device(managers_.ordinalOf(manager)); }
  // From allocation-like hooks: the manager of the current context's device,
  // activated on its first call if possible; nullptr when there is none
  // (look at state()).
  MemoryManager* activate();

  // Start-up, once per process (later calls answer what the first found):
  // Ready; BadConfiguration (state Failed); or NotAdmitted, a query started
  // before its admission that will not be admitted: the process must not
  // use the GPU.
  enum class Start { Ready, BadConfiguration, NotAdmitted };
  Start start();

  // The advice API's way to the node (mqx_node_declare_operator): the
  // admission client of the query this process runs for. Joins the node for
  // device 0 on the first call if activation has not (a query declares its
  // plan before its first CUDA call). Null when no mqxd runs for this user
  // and instance, or start-up did not end Ready.
  ipc::AdmissionClient* nodeAdmission();

  // cuInit failed: nothing will be managed; logged once.
  void noDevice(const std::string& why);

  State state() const noexcept { return state_.load(std::memory_order_acquire); }

  // Stream captures begun and not yet ended in this process (capture_hooks.cpp).
  // While there are none, no stream can be capturing, and the hot paths skip
  // asking the driver (cuStreamIsCapturing) on every copy and launch.
  void captureBegun() noexcept { captures_.fetch_add(1, std::memory_order_acq_rel); }
  void captureEnded() noexcept;
  bool anyCapture() const noexcept { return captures_.load(std::memory_order_acquire) != 0; }

private:
  // What one managed device owns; leaked like the Runtime.
  struct DeviceStorage {
    std::unique_ptr<device::cuda::CudaBackend> backend;
    std::unique_ptr<ipc::ManagerOnNode> manager; // on the node when one runs
    std::unique_ptr<device::cuda::CudaLaunchTuning> tuning;
  };

  // Membership of mqxd's node for one device of the node, and the admission
  // client of the query this process runs for (its demand). Kept until exit:
  // the budget it backs is used until then.
  struct NodeJoin {
    std::shared_ptr<ipc::NodeMembership> membership;
    std::shared_ptr<ipc::AdmissionClient> queryAdmission;
  };

  Runtime() = default;
  Start startOnce();
  MemoryManager* activateLocked(const device::cuda::DriverApi& api, CUdevice device);
  void passThrough(const std::string& why);
  // Joins the node for the device of `ordinal` (named by its UUID when the
  // driver `api` can tell), once per device; null when no node runs or the
  // join failed (said).
  NodeJoin* joinNode(const device::cuda::DriverApi* api, int ordinal);
  // At exit (registered once, by the first join or activation): logs the
  // statistics, finishes the traces, leaves the node and the launch service.
  static void exitHandler();
  void registerExitHandler();
  // Launch tuning on device `ordinal` of the node device `nodeDevice` (the
  // process's one LaunchTuningClient, connected on the first call).
  void startLaunchTuning(const device::cuda::DriverApi& api, int ordinal, std::uint32_t nodeDevice);

public:
  // The memory pools the program created (pool_hooks.cpp).
  MemoryPools& pools() noexcept { return pools_; }
  // The program's own VMM allocations that mqx manages (vmm_hooks.cpp), and
  // whether it does (memory.manage_program_vmm, read when configured).
  ProgramAllocations& programAllocations() noexcept { return programAllocations_; }
  // Managed allocations given to other processes (cuIpcGetMemHandle).
  ipc::MemoryExportServer& memoryExports() noexcept { return memoryExports_; }
  bool managesProgramVmm() const noexcept { return manageProgramVmm_.load(std::memory_order_acquire); }
  // The devices the process sees (cuDeviceGetCount at the first activation;
  // 0 before it).
  int visibleDevices() const noexcept { return visibleDevices_.load(std::memory_order_acquire); }

  // The advice API's declarations of resizable kernels (by handle or by
  // name); kept until launch tuning starts, which may be after them.
  void declareResizable(FunctionHandle function);
  void declareResizable(const std::string& name);

private:
  std::vector<FunctionHandle> declaredFunctions_; // under mutex_
  std::vector<std::string> declaredNames_;        // under mutex_

  std::mutex mutex_;
  std::atomic<State> state_{State::Pending};
  std::atomic<std::int64_t> captures_{0};
  DeviceManagers managers_;
  std::array<std::atomic<device::cuda::CudaBackend*>, DeviceManagers::kMaxDevices> backends_{};
  std::array<DeviceStorage, DeviceManagers::kMaxDevices> devices_; // under mutex_
  std::array<bool, DeviceManagers::kMaxDevices> refused_{}; // a later device that cannot be managed; under mutex_
  std::atomic<int> visibleDevices_{0};                      // cuDeviceGetCount at the first activation
  std::once_flag driverOnce_;
  const device::cuda::DriverApi* driver_ = nullptr; // set once, under driverOnce_
  std::once_flag startOnce_;
  Start started_ = Start::Ready; // start()'s answer, set once under startOnce_
  Config config_;                // read once, under startOnce_
  std::once_flag exitHandlerOnce_;
  // The node joins: one per device the process manages; the first (device 0
  // when the advice API joins before any activation) is the advice API's.
  std::mutex nodeMutex_;                                                         // after mutex_ when both are held
  std::array<std::unique_ptr<NodeJoin>, DeviceManagers::kMaxDevices> nodeJoins_; // under nodeMutex_
  std::array<bool, DeviceManagers::kMaxDevices> nodeJoinTried_{};                // under nodeMutex_
  NodeJoin* adviceJoin_ = nullptr;                                               // under nodeMutex_
  device::cuda::DriverApi driverStorage_;
  std::array<std::atomic<device::cuda::CudaLaunchTuning*>, DeviceManagers::kMaxDevices> tunings_{};
  std::shared_ptr<ipc::LaunchTuningClient> launchTuningClient_; // under mutex_; to leave at exit
  bool launchTuningTried_ = false;                              // under mutex_
  MemoryPools pools_;
  ProgramAllocations programAllocations_;
  ipc::MemoryExportServer memoryExports_;
  std::atomic<bool> manageProgramVmm_{true};
};

} // namespace mqx::hook
