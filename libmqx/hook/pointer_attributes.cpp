#include "hook/pointer_attributes.hpp"

#include <cstring>

namespace mqx::hook {
namespace {

template <typename T> CUresult put(void* data, T value) {
  std::memcpy(data, &value, sizeof(T));
  return CUDA_SUCCESS;
}

} // namespace

CUresult describeManagedPointer(const ManagedPointer& pointer, CUpointer_attribute attribute, void* data) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Boolean attributes are written as the driver writes them, 4-byte
  // integers: cudart 13's cudaPointerGetAttributes reads IS_MANAGED into an
  // uninitialised unsigned int, so a 1-byte answer left garbage above it and
  // a device pointer read as managed (gpu.multi_device.allocate_each on two
  // H100s). gpu.driver.pointer_queries compares the width with the driver's.
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: return put(data, pointer.context);
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return put(data, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return put(data, pointer.address);
  case CU_POINTER_ATTRIBUTE_HOST_POINTER: return CUDA_ERROR_INVALID_VALUE; // device memory, as for cuMemAlloc
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return put(data, 1U);             // mqx's blocking copies always synchronise
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: return put(data, static_cast<unsigned long long>(pointer.region.base));
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: return put(data, 0U); // not cudaMallocManaged memory
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return put(data, pointer.deviceOrdinal);
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return put(data, 0U);
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return put(data, static_cast<CUdeviceptr>(pointer.region.base));
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return put(data, pointer.region.size);
  case CU_POINTER_ATTRIBUTE_MAPPED: return put(data, 1U); // usable: mqx backs it on demand
  case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return put(data, 0U);
  case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return put(data, 0U);
  case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    return put(data, static_cast<unsigned>(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE));
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return put(data, static_cast<CUmemoryPool>(nullptr));
  case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return put(data, pointer.region.size);
  case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return put(data, static_cast<CUdeviceptr>(pointer.region.base));
  case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return put(data, static_cast<unsigned long long>(pointer.region.base));
  default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

} // namespace mqx::hook
