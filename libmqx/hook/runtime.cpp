#include "hook/runtime.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "common/log.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/query_admission_gate.hpp"

namespace mqx::hook {

using device::cuda::CudaBackend;
using device::cuda::CudaBackendOptions;
using device::cuda::DriverApi;

namespace {

// How the node names the device of `ordinal`: its UUID as nvidia-smi -L
// prints it (mqxd lists the node's GPUs by it), or "" (the node's first
// device) when the driver cannot say.
std::string nodeDeviceName(const DriverApi& api, int ordinal) {
  CUdevice device = 0;
  CUuuid uuid{};
  if (api.cuDeviceGetUuid_v2 == nullptr || api.cuDeviceGet(&device, ordinal) != CUDA_SUCCESS ||
      api.cuDeviceGetUuid_v2(&uuid, device) != CUDA_SUCCESS)
    return {};
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", b[0],
      b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

} // namespace

Runtime& Runtime::instance() {
  // Leaked on purpose: hooks may run after static destructors.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

Runtime::Start Runtime::start() {
  std::call_once(startOnce_, [this] { started_ = startOnce(); });
  return started_;
}

Runtime::Start Runtime::startOnce() {
  try {
    config_ = loadConfig();
  } catch (const std::exception& error) {
    state_.store(State::Failed, std::memory_order_release);
    log(LogLevel::Error, "{}: refusing to run unmanaged; CUDA calls fail with CUDA_ERROR_NOT_INITIALIZED",
        error.what());
    return Start::BadConfiguration;
  }
  setLogLevel(config_.logLevel);
  manageProgramVmm_.store(config_.manageProgramVmm, std::memory_order_release);
  // A query started before its admission stays off the GPU until admitted,
  // and is shown the device mqxd placed it on before the driver starts (it
  // reads CUDA_VISIBLE_DEVICES in cuInit). Any other process passes at once.
  const ipc::AdmissionGateOutcome gate = ipc::passAdmissionGate(config_.daemonInstance);
  if (!gate.admitted) {
    log(LogLevel::Error, "the query was not admitted ({}): this process does not use the GPU", gate.refusal);
    return Start::NotAdmitted;
  }
  return Start::Ready;
}

Runtime::NodeJoin* Runtime::joinNode(const DriverApi* api, int ordinal) {
  std::lock_guard lock(nodeMutex_);
  if (ordinal < 0 || ordinal >= DeviceManagers::kMaxDevices) return nullptr;
  if (nodeJoinTried_[ordinal]) return nodeJoins_[ordinal].get();
  nodeJoinTried_[ordinal] = true;
  ipc::NodeOptions options = embedded::nodeOptions(config_);
  if (api != nullptr) options.device = nodeDeviceName(*api, ordinal);
  try {
    auto membership =
        ipc::NodeMembership::connect(options, ipc::NodeMembership::Role::Memory, program_invocation_short_name);
    if (membership == nullptr) return nullptr;
    auto admission = std::make_shared<ipc::AdmissionClient>(membership, embedded::admissionOptions(config_));
    nodeJoins_[ordinal] = std::make_unique<NodeJoin>(NodeJoin{std::move(membership), std::move(admission)});
    if (adviceJoin_ == nullptr) adviceJoin_ = nodeJoins_[ordinal].get();
    registerExitHandler(); // a process that never activates leaves at exit too
    return nodeJoins_[ordinal].get();
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "cannot join mqxd's node for device {} ({}); managing its memory alone", ordinal, error.what());
    return nullptr;
  }
}

ipc::AdmissionClient* Runtime::nodeAdmission() {
  if (start() != Start::Ready) return nullptr;
  {
    std::lock_guard lock(nodeMutex_);
    if (adviceJoin_ != nullptr) return adviceJoin_->queryAdmission.get();
  }
  // Before the first activation: device 0, the device mqx-run placed the
  // query on (it exports CUDA_VISIBLE_DEVICES). The driver names it once
  // initialised; cuInit is what the program's first CUDA call does anyway.
  const DriverApi* api = driver();
  if (api != nullptr && api->cuInit(0) != CUDA_SUCCESS) api = nullptr;
  joinNode(api, 0);
  std::lock_guard lock(nodeMutex_);
  return adviceJoin_ != nullptr ? adviceJoin_->queryAdmission.get() : nullptr;
}

void Runtime::registerExitHandler() {
  // Registered by the first activation after cudart's own exit handler, so
  // that it runs before cudart tears the context down; registered earlier
  // (the advice API joined first) it runs after. Either is safe: it only
  // reads counters, writes the traces and leaves the node (the context's
  // memory goes with the process; budget calls after leave() are ignored).
  std::call_once(exitHandlerOnce_, [] { std::atexit(exitHandler); });
}

void Runtime::exitHandler() {
  Runtime& runtime = instance();
  runtime.managers_.forEach([](int ordinal, MemoryManager& manager) {
    try {
      log(LogLevel::Info, "statistics of device {}: {}", ordinal, manager.statistics().toJson());
    } catch (...) {
    }
    manager.finishTrace();
  });
  {
    std::lock_guard lock(runtime.nodeMutex_);
    for (const auto& join : runtime.nodeJoins_)
      if (join != nullptr) join->membership->leave();
  }
  // Set once, under mutex_, which is not taken here: a thread stopped
  // inside an activation must not hold up the exit.
  if (runtime.launchTuningClient_ != nullptr) runtime.launchTuningClient_->leave();
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

Runtime::ManagedDevice Runtime::device(int ordinal) const noexcept {
  if (ordinal < 0 || ordinal >= DeviceManagers::kMaxDevices) return {};
  return ManagedDevice{backends_[ordinal].load(std::memory_order_acquire), managers_.on(ordinal),
                       tunings_[ordinal].load(std::memory_order_acquire)};
}

Runtime::ManagedDevice Runtime::current() const noexcept {
  if (managers_.count() == 0) return {};
  // One device in sight: it is the current one whenever a context is.
  if (visibleDevices_.load(std::memory_order_acquire) == 1) return device(0);
  CUdevice ordinal = 0;
  if (driver_ == nullptr || driver_->cuCtxGetDevice == nullptr || driver_->cuCtxGetDevice(&ordinal) != CUDA_SUCCESS)
    return {};
  return device(static_cast<int>(ordinal));
}

MemoryManager* Runtime::activate() {
  if (state() == State::Active) {
    if (MemoryManager* manager = current().manager) return manager;
  } else if (state() != State::Pending) {
    return nullptr;
  }
  const DriverApi* api = driver();
  if (api == nullptr) return nullptr;
  CUcontext context = nullptr;
  CUdevice device = 0;
  if (api->cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return nullptr; // stay as we are
  if (api->cuCtxGetDevice(&device) != CUDA_SUCCESS || device < 0 || device >= DeviceManagers::kMaxDevices)
    return nullptr;
  if (start() != Start::Ready) return nullptr;
  std::lock_guard lock(mutex_);
  if (MemoryManager* manager = managers_.on(device)) return manager;
  if ((state() != State::Pending && state() != State::Active) || refused_[device]) return nullptr;
  return activateLocked(*api, device);
}

MemoryManager* Runtime::activateLocked(const DriverApi& api, CUdevice device) {
  const bool first = managers_.count() == 0;
  // Refusals of the first device pass the whole process through; a later
  // device that cannot be managed only leaves that device's calls to the
  // driver (the managed ones keep their memory).
  auto refuse = [&](const std::string& why) -> MemoryManager* {
    if (first) {
      passThrough(why);
    } else {
      refused_[device] = true;
      log(LogLevel::Warn, "device {}: {}: its calls pass through unmanaged", device, why);
    }
    return nullptr;
  };
  if (config_.backend == BackendKind::Sim) return refuse("backend.kind is sim, which cannot serve a GPU process");
  if (std::string missing; !api.complete(missing))
    return refuse("libcuda.so.1 lacks " + missing + " (driver too old?)");
  std::unique_ptr<CudaBackend> backend;
  CudaBackendOptions options;
  options.fenceCoalesceMicroseconds = config_.fenceCoalesceMicroseconds;
  if (Status status = CudaBackend::create(api, options, &backend); !ok(status))
    return refuse(fmt::format("the CUDA backend cannot start ({})", toString(status)));
  // Joins the node for this device: its device memory then comes from the
  // device's budget on the node and other processes on the device may ask
  // it to evict. No node: alone.
  NodeJoin* join = joinNode(&api, device);
  ManagerOptions managerOptions = embedded::managerOptions(config_);
  // Only the first device's manager write-protects host memory: two
  // managers protecting one page could each lift the other's protection
  // (DeviceManagers::first). The others save a lazy copy's source at copy
  // time, and still move it to the device only when a launch needs it.
  if (!first) managerOptions.copyOnWrite = false;
  DeviceStorage& storage = devices_[device];
  try {
    storage.manager =
        std::make_unique<ipc::ManagerOnNode>(managerOptions, *backend, join != nullptr ? join->membership : nullptr,
                                             join != nullptr ? join->queryAdmission : nullptr);
  } catch (const std::exception& error) {
    return refuse(fmt::format("the memory manager cannot start ({})", error.what()));
  }
  storage.backend = std::move(backend);
  MemoryManager* manager = &storage.manager->manager();
  if (first) {
    int count = 0;
    if (api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) count = 2; // unknown: ask every time
    visibleDevices_.store(count, std::memory_order_release);
    // Copy-on-write faults and frees of protected host buffers go to it from
    // now on.
    registerHostMemoryManager(manager);
  }
  backends_[device].store(storage.backend.get(), std::memory_order_release);
  managers_.add(device, manager);
  state_.store(State::Active, std::memory_order_release);
  log(LogLevel::Info, "managing device memory on device {}, {} (limit {} MiB, page {} KiB, policy {})", device,
      storage.backend->deviceName(), config_.deviceMemoryLimit >> 20, config_.pageSize >> 10,
      toString(config_.replacement));
  if (join != nullptr) startLaunchTuning(api, device, join->membership->device());
  registerExitHandler();
  return manager;
}

void Runtime::startLaunchTuning(const DriverApi& api, int ordinal, std::uint32_t nodeDevice) {
  // Resizable kernels get the launch service's parameters (docs/kernelopt.md),
  // solved for the node device this device is (docs/daemon.md, "Several
  // GPUs"); the devices share the process's one client.
  try {
    if (!launchTuningTried_) {
      launchTuningTried_ = true;
      launchTuningClient_ = ipc::LaunchTuningClient::connect(
          config_.daemonInstance, std::chrono::milliseconds(config_.launchReplyTimeoutMilliseconds));
    }
    if (launchTuningClient_ == nullptr) return;
    auto& tuning = devices_[ordinal].tuning;
    tuning = std::make_unique<device::cuda::CudaLaunchTuning>(
        api, config_.resizableKernels, std::make_shared<ipc::NodeDeviceLaunchTuner>(launchTuningClient_, nodeDevice));
    for (FunctionHandle function : declaredFunctions_)
      tuning->launches().declare(function);
    for (const std::string& name : declaredNames_)
      tuning->launches().declareName(name);
    tunings_[ordinal].store(tuning.get(), std::memory_order_release);
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "no launch tuning on device {} ({}): every kernel keeps its launch parameters", ordinal,
        error.what());
  }
}

void Runtime::declareResizable(FunctionHandle function) {
  std::lock_guard lock(mutex_);
  declaredFunctions_.push_back(function);
  for (auto& storage : devices_)
    if (storage.tuning != nullptr) storage.tuning->launches().declare(function);
}

void Runtime::declareResizable(const std::string& name) {
  std::lock_guard lock(mutex_);
  declaredNames_.push_back(name);
  for (auto& storage : devices_)
    if (storage.tuning != nullptr) storage.tuning->launches().declareName(name);
}

} // namespace mqx::hook
