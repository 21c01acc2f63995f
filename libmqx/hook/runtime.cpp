#include "hook/runtime.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "common/log.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "hook/node_membership.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::hook {

using device::cuda::CudaBackend;
using device::cuda::CudaBackendOptions;
using device::cuda::DriverApi;

namespace {

// Membership of mqxd's node, when one runs (docs/daemon.md), and the
// admission client of the query this process runs for (its demand). Leaked
// on purpose like the Runtime: the budget it backs is used until exit.
// Joined once, by the first of activation and the advice API
// (mqx_declare_operator may come before the process's first CUDA call).
struct NodeJoin {
  std::shared_ptr<ipc::NodeMembership> membership;
  std::shared_ptr<ipc::AdmissionClient> queryAdmission;
};
NodeJoin* nodeJoin = nullptr;
std::once_flag nodeJoinOnce;

void joinNodeOnce(const Config& config) {
  std::call_once(nodeJoinOnce, [&config] {
    try {
      auto membership = ipc::NodeMembership::connect(embedded::nodeOptions(config), ipc::NodeMembership::Role::Memory,
                                                     program_invocation_short_name);
      if (membership == nullptr) return;
      auto admission = std::make_shared<ipc::AdmissionClient>(membership, embedded::admissionOptions(config));
      nodeJoin = new NodeJoin{std::move(membership), std::move(admission)};
      // A process that never activates leaves at exit too (leave() is
      // idempotent: activation's exit handler calls it as well).
      std::atexit([] { nodeJoin->membership->leave(); });
    } catch (const std::exception& error) {
      log(LogLevel::Warn, "cannot join mqxd's node ({}); managing this process's device memory alone", error.what());
    }
  });
}

} // namespace

ipc::AdmissionClient* nodeAdmission() {
  // The advice API's way in: the configuration is read here once (a bad one
  // is reported by the hooks; the declaration is then a no-op).
  static std::once_flag configured;
  static Config config;
  static bool valid = false;
  std::call_once(configured, [] {
    try {
      config = loadConfig();
      valid = true;
    } catch (const std::exception& error) {
      log(LogLevel::Warn, "{}: not joining mqxd's node for the advice API", error.what());
    }
  });
  if (valid) joinNodeOnce(config);
  return nodeJoin != nullptr ? nodeJoin->queryAdmission.get() : nullptr;
}

Runtime& Runtime::instance() {
  // Leaked on purpose: hooks may run after static destructors.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

void Runtime::captureEnded() noexcept {
  // Never below zero: an end whose begin was not seen (a capture begun
  // through an entry point mqx does not hook) must not hide a later one.
  std::int64_t current = captures_.load(std::memory_order_acquire);
  while (current > 0 && !captures_.compare_exchange_weak(current, current - 1, std::memory_order_acq_rel)) {
  }
}

const DriverApi* Runtime::driver() {
  std::call_once(driverOnce_, [this] {
    std::string error;
    if (DriverApi::load(driverStorage_, error)) {
      driver_ = &driverStorage_;
    } else {
      passThrough(error);
    }
  });
  return driver_;
}

void Runtime::passThrough(const std::string& why) {
  State expected = State::Pending;
  if (state_.compare_exchange_strong(expected, State::PassThrough)) {
    log(LogLevel::Warn, "{}: passing every CUDA call through unmanaged", why);
  }
}

void Runtime::noDevice(const std::string& why) { passThrough(why); }

bool Runtime::configureLocked() {
  if (configured_) return state() != State::Failed;
  configured_ = true;
  try {
    config_ = loadConfig();
    setLogLevel(config_.logLevel);
    return true;
  } catch (const std::exception& error) {
    state_.store(State::Failed, std::memory_order_release);
    log(LogLevel::Error,
        "{}: refusing to run unmanaged; CUDA calls fail with "
        "CUDA_ERROR_NOT_INITIALIZED",
        error.what());
    return false;
  }
}

bool Runtime::configure() {
  std::lock_guard lock(mutex_);
  return configureLocked();
}

MemoryManager* Runtime::activate() {
  if (MemoryManager* manager = this->manager()) return manager;
  if (state() != State::Pending) return nullptr;
  const DriverApi* api = driver();
  if (api == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  if (MemoryManager* manager = this->manager()) return manager;
  if (state() != State::Pending || !configureLocked()) return nullptr;
  if (config_.backend == BackendKind::Sim) {
    passThrough("backend.kind is sim, which cannot serve a GPU process");
    return nullptr;
  }
  if (std::string missing; !api->complete(missing)) {
    passThrough("libcuda.so.1 lacks " + missing + " (driver too old?)");
    return nullptr;
  }
  CUcontext context = nullptr;
  if (api->cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return nullptr; // stay pending
  std::unique_ptr<CudaBackend> backend;
  CudaBackendOptions options;
  options.fenceCoalesceMicroseconds = config_.fenceCoalesceMicroseconds;
  if (Status status = CudaBackend::create(*api, options, &backend); !ok(status)) {
    passThrough(fmt::format("the CUDA backend cannot start ({})", toString(status)));
    return nullptr;
  }
  // Joins the node: the process's device memory then comes from the node's
  // budget and other processes may ask it to evict. No node: alone.
  joinNodeOnce(config_);
  try {
    managerStorage_ = std::make_unique<ipc::ManagerOnNode>(embedded::managerOptions(config_), *backend,
                                                           nodeJoin != nullptr ? nodeJoin->membership : nullptr,
                                                           nodeJoin != nullptr ? nodeJoin->queryAdmission : nullptr);
  } catch (const std::exception& error) {
    passThrough(fmt::format("the memory manager cannot start ({})", error.what()));
    return nullptr;
  }
  // Copy-on-write faults and frees of protected host buffers go to it from now
  // on.
  registerHostMemoryManager(&managerStorage_->manager());
  backendStorage_ = std::move(backend);
  backend_.store(backendStorage_.get(), std::memory_order_release);
  manager_.store(&managerStorage_->manager(), std::memory_order_release);
  state_.store(State::Active, std::memory_order_release);
  log(LogLevel::Info, "managing device memory on {} (limit {} MiB, page {} KiB, policy {})",
      backendStorage_->deviceName(), config_.deviceMemoryLimit >> 20, config_.pageSize >> 10,
      toString(config_.replacement));
  if (nodeJoin != nullptr) startLaunchTuning(*api);
  // Registered after cudart's own exit handler, so it runs before cudart
  // tears the context down; it only reads counters (and leaves the node:
  // the context's memory goes with the process).
  std::atexit([] {
    Runtime::instance().logStatisticsAtExit();
    if (MemoryManager* manager = Runtime::instance().manager()) manager->finishTrace();
    if (nodeJoin != nullptr) nodeJoin->membership->leave();
    if (auto& tuner = Runtime::instance().launchTuningClient_) tuner->leave();
  });
  return &managerStorage_->manager();
}

void Runtime::startLaunchTuning(const DriverApi& api) {
  // Resizable kernels get the launch service's parameters (docs/kernelopt.md).
  try {
    if (auto tuner = ipc::LaunchTuningClient::connect(
            config_.daemonInstance, std::chrono::milliseconds(config_.launchReplyTimeoutMilliseconds))) {
      launchTuningClient_ = tuner;
      launchTuningStorage_ =
          std::make_unique<device::cuda::CudaLaunchTuning>(api, config_.resizableKernels, std::move(tuner));
      for (FunctionHandle function : declaredFunctions_)
        launchTuningStorage_->launches().declare(function);
      for (const std::string& name : declaredNames_)
        launchTuningStorage_->launches().declareName(name);
      launchTuning_.store(launchTuningStorage_.get(), std::memory_order_release);
    }
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "no launch tuning ({}): every kernel keeps its launch parameters", error.what());
  }
}

void Runtime::declareResizable(FunctionHandle function) {
  std::lock_guard lock(mutex_);
  declaredFunctions_.push_back(function);
  if (auto* tuning = launchTuning()) tuning->launches().declare(function);
}

void Runtime::declareResizable(const std::string& name) {
  std::lock_guard lock(mutex_);
  declaredNames_.push_back(name);
  if (auto* tuning = launchTuning()) tuning->launches().declareName(name);
}

void Runtime::logStatisticsAtExit() {
  if (MemoryManager* manager = this->manager()) {
    try {
      log(LogLevel::Info, "statistics: {}", manager->statistics().toJson());
    } catch (...) {
    }
  }
}

} // namespace mqx::hook
