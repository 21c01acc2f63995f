#include "device/cuda/cuda_backend.hpp"

#include "common/log.hpp"
#include "device/cuda/context_guard.hpp"
#include "device/cuda/cu_status.hpp"
#include "device/cuda/native_launch.hpp"

namespace mqx::device::cuda {
namespace {

CUstream toStream(StreamHandle handle) { return reinterpret_cast<CUstream>(handle); }
StreamHandle toHandle(CUstream stream) { return reinterpret_cast<StreamHandle>(stream); }

} // namespace

CudaBackend::CudaBackend(const DriverApi& api, CUcontext context, CUdevice device, const CudaBackendOptions& options)
    : api_(api), context_(context), device_(device), mappings_(api, device), hostBlocks_(api, device),
      fences_(api, options.fenceCoalesceMicroseconds), staging_(api, options.staging), layouts_(api) {}

CudaBackend::~CudaBackend() = default;

Status CudaBackend::check(const char* call, CUresult result) const {
  if (result != CUDA_SUCCESS) log(LogLevel::Warn, "{}", api_.describe(call, result));
  return toStatus(result);
}

Status CudaBackend::create(const DriverApi& api, const CudaBackendOptions& options, std::unique_ptr<CudaBackend>* out) {
  CUcontext context = nullptr;
  if (api.cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return Status::InvalidContext;
  CUdevice device = 0;
  if (CUresult result = api.cuCtxGetDevice(&device); result != CUDA_SUCCESS) return toStatus(result);
  std::unique_ptr<CudaBackend> backend(new CudaBackend(api, context, device, options));
  MQX_TRY(backend->initialise());
  *out = std::move(backend);
  return Status::Success;
}

Status CudaBackend::initialise() {
  char name[256] = {};
  MQX_TRY(check("cuDeviceGetName", api_.cuDeviceGetName(name, sizeof(name) - 1, device_)));
  deviceName_ = name;
  MQX_TRY(check("cuDeviceTotalMem", api_.cuDeviceTotalMem_v2(&totalMemory_, device_)));
  int vmm = 0;
  int memOps = 0;
  MQX_TRY(check("cuDeviceGetAttribute",
                api_.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device_)));
  MQX_TRY(check("cuDeviceGetAttribute",
                api_.cuDeviceGetAttribute(&memOps, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device_)));
  if (vmm == 0 || memOps == 0) {
    log(LogLevel::Error, "{} lacks {}", deviceName_,
        vmm == 0 ? "virtual memory management" : "64-bit stream memory operations");
    return Status::NotSupported;
  }
  MQX_TRY(check("cuMemGetAllocationGranularity", toCuResult(mappings_.queryGranularity(&granularity_))));
  hostBlocksSupported_ = ok(hostBlocks_.probe());
  MQX_TRY(check("cuStreamCreate", createStream(api_, CU_STREAM_NON_BLOCKING, &toDevice_)));
  MQX_TRY(check("cuStreamCreate", createStream(api_, CU_STREAM_NON_BLOCKING, &toHost_)));
  MQX_TRY(check("cuEventCreate", createEvent(api_, CU_EVENT_DISABLE_TIMING, &orderEvent_)));
  MQX_TRY(fences_.writeEveryFence(toHandle(toDevice_.get())));
  MQX_TRY(fences_.writeEveryFence(toHandle(toHost_.get())));
  log(LogLevel::Info, "cuda backend on {}: {} MiB, granularity {} KiB, {} staging copy threads", deviceName_,
      totalMemory_ >> 20, granularity_ >> 10, staging_.copyThreads());
  return Status::Success;
}

std::size_t CudaBackend::freeMemory() const {
  ContextGuard guard(api_, context_);
  std::size_t free = 0;
  std::size_t total = 0;
  if (api_.cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS) return 0;
  return free;
}

Status CudaBackend::reserve(std::size_t bytes, DevicePtr* base) {
  if (bytes == 0 || bytes % granularity_ != 0 || base == nullptr) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return mappings_.reserve(bytes, granularity_, base);
}

Status CudaBackend::release(DevicePtr base, std::size_t bytes) {
  ContextGuard guard(api_, context_);
  return mappings_.release(base, bytes);
}

Status CudaBackend::map(DevicePtr address, std::size_t bytes) {
  if (bytes == 0 || address % granularity_ != 0 || bytes % granularity_ != 0) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return mappings_.map(address, bytes);
}

Status CudaBackend::unmap(DevicePtr address, std::size_t bytes) {
  ContextGuard guard(api_, context_);
  return mappings_.unmap(address, bytes);
}

Status CudaBackend::shareMapping(DevicePtr address, std::size_t bytes, int* descriptor) {
  ContextGuard guard(api_, context_);
  // The copy onto the exportable allocation runs on the backend's own
  // device-to-device path: the host-to-device stream, idle when the core
  // shares (it drained every stream first).
  return mappings_.share(address, bytes, toDevice_.get(), descriptor);
}

Status CudaBackend::mapShared(DevicePtr address, std::size_t bytes, int descriptor) {
  if (bytes == 0 || address % granularity_ != 0 || bytes % granularity_ != 0) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return mappings_.mapShared(address, bytes, descriptor);
}

Status CudaBackend::createHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) {
  if (!hostBlocksSupported_) return Status::NotSupported;
  if (bytes == 0 || count == 0 || bytes % granularity_ != 0 || blocks == nullptr) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return hostBlocks_.create(bytes, count, blocks);
}

Status CudaBackend::createLendableHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) {
  if (!hostBlocksSupported_) return Status::NotSupported;
  if (bytes == 0 || count == 0 || bytes % granularity_ != 0 || blocks == nullptr) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return hostBlocks_.create(bytes, count, blocks, true);
}

Status CudaBackend::exportHostBlock(const HostBlock& block, LentHostBlock* lent) {
  ContextGuard guard(api_, context_);
  return hostBlocks_.exportBlock(block, lent);
}

Status CudaBackend::importHostBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks) {
  if (!hostBlocksSupported_) return Status::NotSupported;
  for (const LentHostBlock& block : lent)
    if (block.bytes == 0 || block.bytes % granularity_ != 0) return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return hostBlocks_.importBlocks(lent, blocks);
}

void CudaBackend::destroyHostBlocks(const std::vector<HostBlock>& blocks) {
  ContextGuard guard(api_, context_);
  hostBlocks_.destroy(blocks);
}

Status CudaBackend::mapHostBlocks(std::span<const HostMapping> mappings) {
  // All or none: every mapping is checked before any is made.
  for (const HostMapping& mapping : mappings)
    if (mapping.block.bytes == 0 || mapping.address % granularity_ != 0 || mapping.block.bytes % granularity_ != 0)
      return Status::InvalidValue;
  ContextGuard guard(api_, context_);
  return mappings_.mapHostBlocks(mappings, hostBlocks_.deviceAccess());
}

Status CudaBackend::allocateHost(std::size_t bytes, void** out) {
  ContextGuard guard(api_, context_);
  // Portable: the swap buffer serves every context of the process.
  return check("cuMemHostAlloc", api_.cuMemHostAlloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE));
}

void CudaBackend::freeHost(void* pointer, std::size_t) {
  ContextGuard guard(api_, context_);
  (void)check("cuMemFreeHost", api_.cuMemFreeHost(pointer)); // check says a failure; nothing else to do
}

StreamHandle CudaBackend::transferStream(TransferDirection direction) {
  return toHandle(direction == TransferDirection::ToDevice ? toDevice_.get() : toHost_.get());
}

bool CudaBackend::isPinned(const void* pointer) const {
  unsigned flags = 0;
  return api_.cuMemHostGetFlags(&flags, const_cast<void*>(pointer)) == CUDA_SUCCESS;
}

Status CudaBackend::copyToDevice(DevicePtr destination, const void* source, std::size_t bytes, StreamHandle stream,
                                 bool hostIsPinned) {
  ContextGuard guard(api_, context_);
  // A host block is reached through its device-visible view: unified
  // addressing, DMA at the pinned rate.
  if (hostBlocks_.contains(source)) {
    return check("cuMemcpyAsync",
                 api_.cuMemcpyAsync(destination, reinterpret_cast<CUdeviceptr>(source), bytes, toStream(stream)));
  }
  if (hostIsPinned || isPinned(source)) {
    return check("cuMemcpyHtoDAsync", api_.cuMemcpyHtoDAsync_v2(destination, source, bytes, toStream(stream)));
  }
  return staging_.toDevice(destination, source, bytes, toStream(stream));
}

Status CudaBackend::copyToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                               bool hostIsPinned) {
  ContextGuard guard(api_, context_);
  if (hostBlocks_.contains(destination)) {
    return check("cuMemcpyAsync",
                 api_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(destination), source, bytes, toStream(stream)));
  }
  if (hostIsPinned || isPinned(destination)) {
    return check("cuMemcpyDtoHAsync", api_.cuMemcpyDtoHAsync_v2(destination, source, bytes, toStream(stream)));
  }
  return staging_.toHost(destination, source, bytes, toStream(stream));
}

Status CudaBackend::copyOnDevice(DevicePtr destination, DevicePtr source, std::size_t bytes, StreamHandle stream) {
  ContextGuard guard(api_, context_);
  return check("cuMemcpyDtoDAsync", api_.cuMemcpyDtoDAsync_v2(destination, source, bytes, toStream(stream)));
}

Status CudaBackend::fill(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
                         StreamHandle stream) {
  ContextGuard guard(api_, context_);
  CUstream s = toStream(stream);
  switch (elementSize) {
  case 1:
    return check("cuMemsetD8Async", api_.cuMemsetD8Async(destination, static_cast<unsigned char>(pattern), count, s));
  case 2:
    return check("cuMemsetD16Async",
                 api_.cuMemsetD16Async(destination, static_cast<unsigned short>(pattern), count, s));
  case 4: return check("cuMemsetD32Async", api_.cuMemsetD32Async(destination, pattern, count, s));
  default: return Status::InvalidValue;
  }
}

Status CudaBackend::launch(const KernelLaunch& launch) {
  // No ContextGuard: a launch runs in the caller's context, which owns the
  // function and the stream.
  CUstream stream = toStream(launch.stream);
  const auto* native = static_cast<const NativeLaunch*>(launch.native);
  const unsigned* g = launch.grid;
  const unsigned* b = launch.block;
  CUresult result = CUDA_SUCCESS;
  if (native == nullptr) {
    result = api_.cuLaunchKernel(reinterpret_cast<CUfunction>(launch.function), g[0], g[1], g[2], b[0], b[1], b[2],
                                 launch.sharedBytes, stream, launch.params, nullptr);
  } else if (native->kind == NativeLaunch::Kind::Kernel) {
    result = api_.cuLaunchKernel(native->function, g[0], g[1], g[2], b[0], b[1], b[2], launch.sharedBytes, stream,
                                 native->kernelParams, native->extra);
  } else if (native->kind == NativeLaunch::Kind::KernelEx) {
    if (api_.cuLaunchKernelEx == nullptr || native->config == nullptr) return Status::NotSupported;
    CUlaunchConfig config = *native->config;
    config.gridDimX = g[0];
    config.gridDimY = g[1];
    config.gridDimZ = g[2];
    config.blockDimX = b[0];
    config.blockDimY = b[1];
    config.blockDimZ = b[2];
    config.sharedMemBytes = launch.sharedBytes;
    config.hStream = stream;
    result = api_.cuLaunchKernelEx(&config, native->function, native->kernelParams, native->extra);
  } else {
    if (api_.cuLaunchCooperativeKernel == nullptr) return Status::NotSupported;
    result = api_.cuLaunchCooperativeKernel(native->function, g[0], g[1], g[2], b[0], b[1], b[2], launch.sharedBytes,
                                            stream, native->kernelParams);
  }
  // Launch errors (bad configuration, say) are the application's: no warning.
  if (result != CUDA_SUCCESS) log(LogLevel::Debug, "{}", api_.describe("launch", result));
  return toStatus(result);
}

Status CudaBackend::paramLayout(FunctionHandle function, std::vector<ParamInfo>* layout) {
  return layouts_.get(reinterpret_cast<CUfunction>(function), layout);
}

Status CudaBackend::order(StreamHandle signaller, StreamHandle waiter) {
  if (signaller == waiter) return Status::Success;
  ContextGuard guard(api_, context_);
  // cuStreamWaitEvent takes the event's state at the call, so one event,
  // re-recorded each time under the lock, serves every ordering.
  std::lock_guard lock(orderMutex_);
  MQX_TRY(check("cuEventRecord", api_.cuEventRecord(orderEvent_.get(), toStream(signaller))));
  return check("cuStreamWaitEvent", api_.cuStreamWaitEvent(toStream(waiter), orderEvent_.get(), 0));
}

Status CudaBackend::enqueueFence(StreamHandle stream, Fence* fence) {
  ContextGuard guard(api_, context_);
  return fences_.enqueue(stream, fence);
}

bool CudaBackend::fenceReached(const Fence& fence) { return fences_.reached(fence); }

Status CudaBackend::waitFence(const Fence& fence) {
  ContextGuard guard(api_, context_);
  return fences_.wait(fence);
}

void CudaBackend::streamDestroyed(StreamHandle stream) {
  ContextGuard guard(api_, context_);
  fences_.retire(stream);
}

Status CudaBackend::synchronize(StreamHandle stream) {
  ContextGuard guard(api_, context_);
  return check("cuStreamSynchronize", api_.cuStreamSynchronize(toStream(stream)));
}

} // namespace mqx::device::cuda
