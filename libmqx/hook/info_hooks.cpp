// Context and information family: cuInit decides early whether this process
// can be managed; cuMemGetInfo reports the managed budget; pointer queries
// describe managed regions as allocations.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"
#include "hook/pointer_attributes.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

// The managed region that holds `address`, or false.
bool managedPointer(CUdeviceptr address, ManagedPointer* pointer) {
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr) return false;
  MemoryManager* manager = runtime.owner(address);
  if (manager == nullptr || !ok(manager->regionOf(address, &pointer->region))) return false;
  const Runtime::ManagedDevice device = runtime.deviceOf(manager);
  pointer->address = address;
  pointer->context = device.backend->context();
  pointer->deviceOrdinal = static_cast<int>(device.backend->device());
  return true;
}

} // namespace

MQX_EXPORT CUresult cuInit(unsigned flags) {
  // Start-up before the driver starts: a bad configuration is reported now,
  // at the program's start, and a query started before its admission stays
  // off the GPU until admitted.
  Runtime& runtime = Runtime::instance();
  switch (runtime.start()) {
  case Runtime::Start::Ready: break;
  case Runtime::Start::BadConfiguration: return CUDA_ERROR_NOT_INITIALIZED;
  case Runtime::Start::NotAdmitted: return CUDA_ERROR_NOT_PERMITTED;
  }
  CUresult result = callReal(&DriverApi::cuInit, flags);
  if (result != CUDA_SUCCESS) {
    const DriverApi* api = runtime.driver();
    runtime.noDevice(api != nullptr ? api->describe("cuInit", result) : "no CUDA driver");
  }
  return result;
}

MQX_EXPORT CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* totalBytes) {
  MemoryManager* manager = Runtime::instance().activate();
  if (manager == nullptr) {
    if (CUresult refused = refusal()) return refused;
    return callReal(&DriverApi::cuMemGetInfo_v2, freeBytes, totalBytes);
  }
  return guarded("cuMemGetInfo", [&] {
    std::size_t free = 0;
    std::size_t total = 0;
    manager->memoryInfo(&free, &total);
    if (freeBytes != nullptr) *freeBytes = free;
    if (totalBytes != nullptr) *totalBytes = total;
    return CUDA_SUCCESS;
  });
}

MQX_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr address) {
  ManagedPointer pointer;
  if (!managedPointer(address, &pointer)) return callReal(&DriverApi::cuMemGetAddressRange_v2, base, size, address);
  if (base != nullptr) *base = pointer.region.base;
  if (size != nullptr) *size = pointer.region.size;
  return CUDA_SUCCESS;
}

MQX_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr address) {
  ManagedPointer pointer;
  if (managedPointer(address, &pointer)) {
    CUresult result = describeManagedPointer(pointer, attribute, data);
    if (result != CUDA_ERROR_NOT_SUPPORTED) return result;
  }
  return callReal(&DriverApi::cuPointerGetAttribute, data, attribute, address);
}

MQX_EXPORT CUresult cuPointerGetAttributes(unsigned count, CUpointer_attribute* attributes, void** data,
                                           CUdeviceptr address) {
  ManagedPointer pointer;
  if (!managedPointer(address, &pointer)) {
    return callReal(&DriverApi::cuPointerGetAttributes, count, attributes, data, address);
  }
  if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    CUresult described = describeManagedPointer(pointer, attributes[i], data[i]);
    if (described == CUDA_ERROR_INVALID_VALUE && attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
      *static_cast<void**>(data[i]) = nullptr; // this form writes a default instead of failing
    } else if (described == CUDA_ERROR_NOT_SUPPORTED) {
      // Not ours to describe: the driver's answer (this call never fails
      // for an unknown pointer, it writes a default).
      CUresult result = callReal(&DriverApi::cuPointerGetAttributes, 1U, &attributes[i], &data[i], address);
      if (result != CUDA_SUCCESS) return result;
    }
  }
  return CUDA_SUCCESS;
}

MQX_EXPORT CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr address) {
  ManagedPointer pointer;
  if (!managedPointer(address, &pointer)) {
    return callReal(&DriverApi::cuPointerSetAttribute, value, attribute, address);
  }
  // SYNC_MEMOPS is the only settable attribute; mqx's blocking copies of
  // managed memory synchronise anyway.
  return attribute == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
