#include "host_block_pool.hpp"

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
  // costs mqxd that context's device memory for as long as the pool lives).
  std::unique_ptr<device::cuda::DriverApi> api;
  CUdevice device = 0;
  bool retained = false;
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
  return fmt::format("{} host blocks of {} MiB lent", lender_->blocks(), blockBytes_ >> 20);
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
  return std::unique_ptr<NodeHostBlockPool>(new NodeHostBlockPool(std::move(backend), std::move(lender), blockBytes));
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
  CUresult result = api.cuInit(0);
  if (result == CUDA_SUCCESS) result = api.cuDeviceGet(&opened->device, 0);
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
