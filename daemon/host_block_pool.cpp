#include "host_block_pool.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/log.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "node_capacity.hpp"
#if MQX_DAEMON_WITH_CUDA
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/driver_api.hpp"
#endif

namespace mqx::daemon {

struct NodeHostBlockPool::Backend {
#if MQX_DAEMON_WITH_CUDA
  // Before the backend, which uses them: the driver's entry points, and
  // device 0's primary context (the CUDA backend works in a context; it
  // costs mqxd that context's device memory for as long as the pool lives:
  // 520 MiB on an H100, left out of the node's budget by deviceBytesHeld).
  std::unique_ptr<device::cuda::DriverApi> api;
  CUdevice device = 0;
  bool retained = false;
  // Device 0's free memory before its context, by NVML (the driver says
  // nothing without a context: cuMemGetInfo returned
  // CUDA_ERROR_INVALID_CONTEXT on an H200), and its index among the node's
  // devices (NVML's, matched by UUID); none when NVML cannot say.
  std::optional<std::uint64_t> freeBefore;
  std::size_t nodeIndex = 0;
  ~Backend() {
    backend.reset();
    if (retained) api->cuDevicePrimaryCtxRelease_v2(device);
  }
#endif
  std::unique_ptr<device::DeviceBackend> backend;
};

NodeHostBlockPool::NodeHostBlockPool(std::unique_ptr<Backend> backend, std::unique_ptr<ipc::HostBlockLender> lender,
                                     std::size_t blockBytes)
    : backend_(std::move(backend)), lender_(std::move(lender)), blockBytes_(blockBytes) {}

NodeHostBlockPool::~NodeHostBlockPool() { lender_.reset(); }

std::string NodeHostBlockPool::describe() const {
  std::string held;
  for (std::size_t i = 0; i < deviceBytesHeld_.size(); ++i)
    if (deviceBytesHeld_[i] != 0)
      held += fmt::format("; its CUDA context holds {} MiB of device {}", deviceBytesHeld_[i] >> 20, i);
  return fmt::format("{} host blocks of {} MiB lent{}", lender_->blocks(), blockBytes_ >> 20, held);
}

void NodeHostBlockPool::measureDeviceBytesHeld() {
#if MQX_DAEMON_WITH_CUDA
  if (backend_->api == nullptr) return; // the simulated device's: no device memory
  if (!backend_->freeBefore) {
    log(LogLevel::Warn,
        "mqxd: the device memory of the host block pool's CUDA context is not known (no NVML to read device 0's "
        "before it): the node's budget does not leave it out (520 MiB on an H100; docs/daemon.md, \"Lent host "
        "blocks\")");
    return;
  }
  // In the context, current on this thread since openBackend.
  std::size_t free = 0;
  std::size_t total = 0;
  if (const CUresult result = backend_->api->cuMemGetInfo_v2(&free, &total); result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "mqxd: the device memory of the host block pool's CUDA context is not known ({})",
        backend_->api->describe("cuMemGetInfo", result));
    return;
  }
  deviceBytesHeld_.assign(backend_->nodeIndex + 1, 0);
  // Another process that freed memory meanwhile makes it look smaller: not below nothing.
  deviceBytesHeld_[backend_->nodeIndex] = *backend_->freeBefore > free ? *backend_->freeBefore - free : 0;
#endif
}

std::unique_ptr<NodeHostBlockPool> NodeHostBlockPool::start(const Config& config, const std::string& socketName) {
  if (config.hostBlockPool == 0) return nullptr;
  std::string why;
  auto backend = openBackend(config, &why);
  if (backend == nullptr) {
    log(LogLevel::Warn, "mqxd: no host block pool ({}): clients create their own", why);
    return nullptr;
  }
  // Blocks of a client's page: each maps whole under one page.
  const std::size_t granularity = backend->backend->granularity();
  const std::size_t blockBytes = (std::max(config.pageSize, granularity) + granularity - 1) / granularity * granularity;
  const std::size_t blocks = std::max<std::size_t>(config.hostBlockPool / blockBytes, 1);
  auto lender = std::make_unique<ipc::HostBlockLender>(*backend->backend,
                                                       ipc::HostBlockLenderOptions{socketName, blockBytes, blocks});
  if (Status status = lender->start(&why); !ok(status)) {
    log(LogLevel::Warn, "mqxd: no host block pool ({}): clients create their own", why);
    return nullptr;
  }
  std::unique_ptr<NodeHostBlockPool> pool(new NodeHostBlockPool(std::move(backend), std::move(lender), blockBytes));
  pool->measureDeviceBytesHeld();
  return pool;
}

std::unique_ptr<NodeHostBlockPool::Backend> NodeHostBlockPool::openBackend(const Config& config, std::string* why) {
  auto opened = std::make_unique<NodeHostBlockPool::Backend>();
  bool gpu = config.backend == BackendKind::Cuda;
  if (config.backend == BackendKind::Auto) gpu = !probeDevices().empty();
  if (!gpu) {
    opened->backend = std::make_unique<device::SimBackend>(embedded::simBackendOptions(config));
    return opened;
  }
#if MQX_DAEMON_WITH_CUDA
  opened->api = std::make_unique<device::cuda::DriverApi>();
  std::string error;
  if (!device::cuda::DriverApi::load(*opened->api, error)) {
    *why = "the CUDA driver: " + error;
    return nullptr;
  }
  const device::cuda::DriverApi& api = *opened->api;
  CUcontext context = nullptr;
  if (api.cuDevicePrimaryCtxRetain == nullptr || api.cuDevicePrimaryCtxRelease_v2 == nullptr) {
    *why = "libcuda.so.1 lacks the primary context's entry points";
    return nullptr;
  }
  // Before cuInit, which the driver may already count on the device.
  const std::vector<DeviceMemory> before = probeNvmlDevices();
  CUresult result = api.cuInit(0);
  if (result == CUDA_SUCCESS) result = api.cuDeviceGet(&opened->device, 0);
  if (CUuuid uuid{}; result == CUDA_SUCCESS && api.cuDeviceGetUuid_v2 != nullptr &&
                     api.cuDeviceGetUuid_v2(&uuid, opened->device) == CUDA_SUCCESS) {
    unsigned char bytes[16];
    std::memcpy(bytes, uuid.bytes, sizeof bytes);
    const std::string identity = formatGpuUuid(bytes);
    for (std::size_t i = 0; i < before.size(); ++i)
      if (before[i].identity == identity) {
        opened->freeBefore = before[i].totalBytes - std::min(before[i].usedBytes, before[i].totalBytes);
        opened->nodeIndex = i;
      }
  }
  if (result == CUDA_SUCCESS) result = api.cuDevicePrimaryCtxRetain(&context, opened->device);
  opened->retained = result == CUDA_SUCCESS;
  // Current on this thread for good: mqxd's main thread makes the pool.
  if (result == CUDA_SUCCESS) result = api.cuCtxPushCurrent_v2(context);
  if (result != CUDA_SUCCESS) {
    *why = api.describe("device 0's context", result);
    return nullptr;
  }
  std::unique_ptr<device::cuda::CudaBackend> backend;
  if (Status status = device::cuda::CudaBackend::create(api, {}, &backend); !ok(status)) {
    *why = fmt::format("the CUDA backend cannot start: {}", toString(status));
    return nullptr;
  }
  opened->backend = std::move(backend);
  return opened;
#else
  *why = "mqxd was built without CUDA";
  return nullptr;
#endif
}

} // namespace mqx::daemon
