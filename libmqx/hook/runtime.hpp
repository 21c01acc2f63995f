// Runtime: the one piece of global mutable state of libmqx.so. It owns the
// real driver's entry points, the configuration, the CUDA backend and the
// MemoryManager, and knows whether this process is managed at all.
//
// States: Pending (nothing decided yet) -> Active (a manager exists) or
// PassThrough (no driver, no GPU, no usable device: every call goes to the
// driver unchanged, said once in the log) or Failed (bad configuration:
// managed entry points fail with CUDA_ERROR_NOT_INITIALIZED, said once).
// Activation happens on the first allocation-like call made with a context
// current (cudart's primary context, or the driver API program's own).
//
// The object is created on first use and never destroyed: hooks can run
// during exit, after static destructors.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/cuda_launch_tuning.hpp"
#include "device/cuda/driver_api.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "ipc/manager_on_node.hpp"

namespace mqx::hook {

class Runtime {
public:
  enum class State { Pending, Active, PassThrough, Failed };

  static Runtime& instance();

  // The real driver, loaded on first use; nullptr when libcuda.so.1 cannot be
  // loaded (then the process is passed through).
  const device::cuda::DriverApi* driver();

  // The manager when Active, else nullptr. Lock-free: the hot path.
  MemoryManager* manager() const noexcept { return manager_.load(std::memory_order_acquire); }
  device::cuda::CudaBackend* backend() const noexcept { return backend_.load(std::memory_order_acquire); }
  // Launch tuning of resizable kernels, when Active and mqxd runs.
  device::cuda::CudaLaunchTuning* launchTuning() const noexcept {
    return launchTuning_.load(std::memory_order_acquire);
  }

  // From allocation-like hooks: activates on first call if possible. Returns
  // the manager, or nullptr (look at state()).
  MemoryManager* activate();

  // Called after a successful cuInit: reads the configuration early so that
  // a bad one is reported at start. False when it is bad (state Failed).
  bool configure();

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
  Runtime() = default;
  bool configureLocked();
  void passThrough(const std::string& why);
  void logStatisticsAtExit();
  void startLaunchTuning(const device::cuda::DriverApi& api);

public:
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
  std::atomic<MemoryManager*> manager_{nullptr};
  std::atomic<device::cuda::CudaBackend*> backend_{nullptr};
  std::once_flag driverOnce_;
  const device::cuda::DriverApi* driver_ = nullptr; // set once, under driverOnce_
  bool configured_ = false;
  Config config_;
  device::cuda::DriverApi driverStorage_;
  std::unique_ptr<device::cuda::CudaBackend> backendStorage_;
  std::unique_ptr<ipc::ManagerOnNode> managerStorage_; // the manager, on the node when one runs
  std::unique_ptr<device::cuda::CudaLaunchTuning> launchTuningStorage_;
  std::shared_ptr<ipc::LaunchTuningClient> launchTuningClient_; // to leave at exit
  std::atomic<device::cuda::CudaLaunchTuning*> launchTuning_{nullptr};
};

} // namespace mqx::hook
