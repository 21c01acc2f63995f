#include "device/cuda/cuda_launch_tuning.hpp"

#include <mutex>

#include "common/log.hpp"

namespace mqx::device::cuda {

CudaLaunchTuning::CudaLaunchTuning(const DriverApi& api, const std::vector<std::string>& resizableKernels,
                                   std::shared_ptr<LaunchTuner> tuner)
    : api_(api), launches_(resizableKernels, std::move(tuner)) {}

CudaLaunchTuning::Kernel CudaLaunchTuning::query(CUfunction function) const {
  Kernel kernel;
  if (api_.cuFuncGetName == nullptr || api_.cuFuncGetAttribute == nullptr) return kernel;
  // cudart 12 launches CUkernel handles: their CUfunction in this context
  // answers the questions.
  CUfunction resolved = function;
  const char* name = nullptr;
  if (api_.cuFuncGetName(&name, resolved) != CUDA_SUCCESS) {
    if (api_.cuKernelGetFunction == nullptr ||
        api_.cuKernelGetFunction(&resolved, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS ||
        api_.cuFuncGetName(&name, resolved) != CUDA_SUCCESS)
      return kernel;
  }
  int registers = 0, staticShared = 0, maxThreads = 0;
  if (api_.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, resolved) != CUDA_SUCCESS ||
      api_.cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, resolved) != CUDA_SUCCESS ||
      api_.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, resolved) != CUDA_SUCCESS)
    return kernel;
  kernel.known = true;
  kernel.resolved = resolved;
  kernel.properties = {name != nullptr ? name : "", registers, staticShared, maxThreads};
  return kernel;
}

const CudaLaunchTuning::Kernel& CudaLaunchTuning::kernelOf(CUfunction function) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = kernels_.find(function); it != kernels_.end()) return it->second;
  }
  Kernel kernel = query(function);
  std::unique_lock lock(mutex_);
  return kernels_.try_emplace(function, std::move(kernel)).first->second;
}

bool CudaLaunchTuning::deviceAttributes(kernelopt::DeviceAttributes* attributes) const {
  CUdevice device = 0;
  if (api_.cuCtxGetDevice(&device) != CUDA_SUCCESS) return false;
  const std::pair<int*, CUdevice_attribute> fields[] = {
      {&attributes->computeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&attributes->computeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&attributes->multiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&attributes->warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&attributes->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&attributes->maxThreadsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&attributes->maxBlocksPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR},
      {&attributes->maxRegistersPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {&attributes->maxRegistersPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&attributes->maxSharedMemoryPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&attributes->maxSharedMemoryPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&attributes->reservedSharedMemoryPerBlock, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK},
  };
  for (const auto& [field, attribute] : fields)
    if (api_.cuDeviceGetAttribute(field, attribute, device) != CUDA_SUCCESS) return false;
  return true;
}

std::uint64_t CudaLaunchTuning::prepare(KernelLaunch& launch, CUfunction function) {
  const Kernel& kernel = kernelOf(function);
  // Declared by either handle: the application may hold the CUkernel
  // (cudaGetKernel) or the CUfunction (cudaGetFuncBySymbol, cuModuleGetFunction).
  if (!kernel.known || !(launches_.isResizable(launch.function, kernel.properties.name) ||
                         launches_.isResizable(reinterpret_cast<FunctionHandle>(kernel.resolved), {})))
    return 0;
  // Per launch, not cached: the calling thread's context decides the device.
  kernelopt::DeviceAttributes device;
  if (!deviceAttributes(&device)) return 0;
  return launches_.tune(launch, kernel.properties, device);
}

void CudaLaunchTuning::launched(std::uint64_t ticket, CUstream stream, bool succeeded) {
  if (ticket == 0) return;
  CUevent event = nullptr;
  if (!succeeded || api_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    launches_.launched(ticket, nullptr);
    return;
  }
  if (api_.cuEventRecord(event, stream) != CUDA_SUCCESS) {
    api_.cuEventDestroy_v2(event);
    launches_.launched(ticket, nullptr);
    return;
  }
  // The event lives until the probe sees it complete (or fail).
  auto owned = std::shared_ptr<CUevent_st>(event, [this](CUevent e) { api_.cuEventDestroy_v2(e); });
  launches_.launched(ticket, [this, owned] { return api_.cuEventQuery(owned.get()) != CUDA_ERROR_NOT_READY; });
}

} // namespace mqx::device::cuda
