// Memory family, the program's own virtual memory management: cuMemCreate
// of device memory, then cuMemMap into a range the program reserved
// (PyTorch's expandable_segments, vLLM's and llama.cpp's pools). With
// memory.manage_program_vmm, cuMemCreate of device memory of the calling
// context's device hands out a handle of mqx's (program_allocations.hpp),
// and cuMemMap of it makes a managed region at the program's address
// (MemoryManager::adopt): paged, counted against the budget, oversubscribed,
// evicted like any allocation; the program's reservation stays its own.
// Mapped at a second address while mapped, its region is shared
// (MemoryManager::share: resident from then on) and the same physical
// memory is mapped there too (openSharedAt); unmapping either leaves the
// other.
// What such a handle cannot do fails with a line, never silently:
//  - map part of it or at an offset (CUDA_ERROR_NOT_SUPPORTED);
//  - map again after an unmap: its bytes went with the region;
//  - be exported (cuMemExportToShareableHandle) before it is mapped, or as
//    anything but a POSIX file descriptor. Mapped, it is exported as
//    MemoryManager::share makes it: its pages on one shareable physical
//    allocation, resident until unmapped.
// Everything else (host memory, another device, a fabric handle, compressed
// memory, the driver's own handles) passes through.
#include <algorithm>

#include <fmt/format.h>

#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

using Handle = ProgramAllocations::Handle;

ProgramAllocations& allocations() { return Runtime::instance().programAllocations(); }

int currentDevice() {
  CUdevice device = -1;
  return callReal(&DriverApi::cuCtxGetDevice, &device) == CUDA_SUCCESS ? static_cast<int>(device) : -1;
}

// The manager a cuMemCreate of `properties` is served by, or nullptr when it
// passes through.
MemoryManager* managerFor(const CUmemAllocationProp& properties, unsigned long long flags) {
  Runtime& runtime = Runtime::instance();
  if (!runtime.managesProgramVmm() || flags != 0) return nullptr;
  if (properties.type != CU_MEM_ALLOCATION_TYPE_PINNED || properties.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return nullptr;
  if ((properties.requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) != 0) return nullptr;
  if (properties.allocFlags.compressionType != 0) return nullptr;
  MemoryManager* manager = runtime.activate();
  if (manager == nullptr || properties.location.id != currentDevice()) return nullptr;
  // A process that sees several devices may give them access to its
  // allocations (cuMemSetAccess for peers: vectorAddMMAP, PyTorch's peer
  // access), which pages that move cannot keep: its VMM stays the driver's.
  // Under mqx-run on a node of several GPUs a query sees its one device.
  if (runtime.visibleDevices() > 1) return nullptr;
  return manager;
}

CUresult unsupported(const char* call, const std::string& why) {
  log(LogLevel::Error,
      "{}: {}; refused with CUDA_ERROR_NOT_SUPPORTED (memory.manage_program_vmm = false leaves the "
      "program's VMM to the driver, unmanaged)",
      call, why);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Unmaps a handle of mqx's at `address`: its region ends there (its bytes
// go with it unless it is mapped at a second address too), or a second
// address's mapping goes.
CUresult unmapManaged(Handle handle, const ProgramAllocations::Allocation& allocation, DevicePtr address) {
  if (address != allocation.mappedAt) {
    const CUresult result =
        guarded("cuMemUnmap", [&] { return managedResult("cuMemUnmap", allocation.manager->closeShared(address)); });
    if (result == CUDA_SUCCESS) allocations().unaliased(handle, address);
    return result;
  }
  const CUresult result =
      guarded("cuMemUnmap", [&] { return managedResult("cuMemUnmap", allocation.manager->free(allocation.mappedAt)); });
  if (result == CUDA_SUCCESS) allocations().unmapped(handle);
  return result;
}

} // namespace

MQX_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                                const CUmemAllocationProp* properties, unsigned long long flags) {
  auto passThrough = [&] { return callReal(&DriverApi::cuMemCreate, handle, bytes, properties, flags); };
  if (handle == nullptr || properties == nullptr) return passThrough();
  MemoryManager* manager = managerFor(*properties, flags);
  if (manager == nullptr) {
    if (CUresult refused = refusal()) return refused;
    return passThrough();
  }
  const std::size_t granularity = Runtime::instance().deviceOf(manager).backend->granularity();
  if (bytes == 0 || bytes % granularity != 0) return CUDA_ERROR_INVALID_VALUE; // as the driver
  return guarded("cuMemCreate", [&] {
    ProgramAllocations::Allocation allocation;
    allocation.bytes = bytes;
    allocation.device = properties->location.id;
    allocation.manager = manager;
    allocation.requestedHandleTypes = static_cast<unsigned long long>(properties->requestedHandleTypes);
    *handle = allocations().create(allocation);
    return CUDA_SUCCESS;
  });
}

MQX_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (!ProgramAllocations::managed(handle)) return callReal(&DriverApi::cuMemRelease, handle);
  if (!allocations().find(handle)) return CUDA_ERROR_INVALID_VALUE;
  allocations().release(handle);
  return CUDA_SUCCESS;
}

MQX_EXPORT CUresult cuMemMap(CUdeviceptr address, size_t bytes, size_t offset, CUmemGenericAllocationHandle handle,
                             unsigned long long flags) {
  if (!ProgramAllocations::managed(handle))
    return callReal(&DriverApi::cuMemMap, address, bytes, offset, handle, flags);
  const auto allocation = allocations().find(handle);
  if (!allocation || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (offset != 0 || bytes != allocation->bytes)
    return unsupported("cuMemMap", fmt::format("an allocation mqx manages maps whole (asked: {} bytes at offset {} of "
                                               "{})",
                                               bytes, offset, allocation->bytes));
  if (allocation->mappedAt != 0)
    return guarded("cuMemMap", [&] {
      SharedAllocation shared;
      Status status = allocation->manager->share(allocation->mappedAt, &shared);
      if (ok(status)) status = allocation->manager->openSharedAt(address, shared.pieces, shared.mappedBytes);
      if (ok(status)) allocations().aliased(handle, address);
      return managedResult("cuMemMap", status);
    });
  if (allocation->wasMapped)
    return unsupported("cuMemMap", "an allocation mqx manages keeps no bytes once unmapped; it cannot map again");
  return guarded("cuMemMap", [&] {
    const CUresult result = managedResult("cuMemMap", allocation->manager->adopt(address, bytes));
    if (result == CUDA_SUCCESS) allocations().mapped(handle, address);
    return result;
  });
}

MQX_EXPORT CUresult cuMemUnmap(CUdeviceptr address, size_t bytes) {
  if (const auto exact = allocations().mappedAt(address); exact && exact->second.bytes == bytes)
    return unmapManaged(exact->first, exact->second, address);
  if (!allocations().mappedIn(address, bytes).empty())
    return unsupported("cuMemUnmap", "the range holds allocations mqx manages and others; unmap each on its own");
  return callReal(&DriverApi::cuMemUnmap, address, bytes);
}

// mqx gives its regions read-write access on their device itself: the
// program's request for that is granted; access for another device (peer
// access to the program's range) is not supported. Parts of the range that
// are not mqx's go to the driver.
MQX_EXPORT CUresult cuMemSetAccess(CUdeviceptr address, size_t bytes, const CUmemAccessDesc* descriptors,
                                   size_t count) {
  const auto managed = allocations().mappedIn(address, bytes);
  if (managed.empty()) return callReal(&DriverApi::cuMemSetAccess, address, bytes, descriptors, count);
  if (descriptors == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto first = allocations().holding(managed.begin()->first);
  for (std::size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& access = descriptors[i];
    if (access.location.type != CU_MEM_LOCATION_TYPE_DEVICE || !first || access.location.id != first->second.device ||
        access.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return unsupported("cuMemSetAccess", "memory mqx manages is read-write on its own device only");
  }
  DevicePtr cursor = address;
  for (const auto& [base, length] : managed) {
    if (base > cursor)
      if (CUresult result = callReal(&DriverApi::cuMemSetAccess, cursor, base - cursor, descriptors, count);
          result != CUDA_SUCCESS)
        return result;
    cursor = std::max<DevicePtr>(cursor, base + length);
  }
  if (cursor < address + bytes)
    return callReal(&DriverApi::cuMemSetAccess, cursor, address + bytes - cursor, descriptors, count);
  return CUDA_SUCCESS;
}

// A range freed while allocations of mqx's are still mapped in it: their
// regions end first (the driver would refuse to free it).
MQX_EXPORT CUresult cuMemAddressFree(CUdeviceptr address, size_t bytes) {
  for (const auto& [base, length] : allocations().mappedIn(address, bytes))
    if (const auto mapped = allocations().mappedAt(base))
      if (CUresult result = unmapManaged(mapped->first, mapped->second, base); result != CUDA_SUCCESS) return result;
  return callReal(&DriverApi::cuMemAddressFree, address, bytes);
}

MQX_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* address) {
  if (const auto mapped = allocations().holding(reinterpret_cast<DevicePtr>(address))) {
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    allocations().retain(mapped->first);
    *handle = mapped->first;
    return CUDA_SUCCESS;
  }
  return callReal(&DriverApi::cuMemRetainAllocationHandle, handle, address);
}

MQX_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* properties,
                                                           CUmemGenericAllocationHandle handle) {
  if (!ProgramAllocations::managed(handle))
    return callReal(&DriverApi::cuMemGetAllocationPropertiesFromHandle, properties, handle);
  const auto allocation = allocations().find(handle);
  if (!allocation || properties == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *properties = CUmemAllocationProp{};
  properties->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties->location.id = allocation->device;
  properties->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(allocation->requestedHandleTypes);
  return CUDA_SUCCESS;
}

MQX_EXPORT CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                                 CUmemAllocationHandleType type, unsigned long long flags) {
  if (!ProgramAllocations::managed(handle))
    return callReal(&DriverApi::cuMemExportToShareableHandle, shareable, handle, type, flags);
  const auto allocation = allocations().find(handle);
  if (!allocation || shareable == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((allocation->requestedHandleTypes & type) == 0) return CUDA_ERROR_INVALID_VALUE; // as the driver: not asked for
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return unsupported("cuMemExportToShareableHandle",
                       "an allocation mqx manages exports as a POSIX file descriptor only");
  if (allocation->mappedAt == 0)
    return unsupported("cuMemExportToShareableHandle",
                       "an allocation mqx manages has its bytes placed when it is mapped; export it after cuMemMap");
  return guarded("cuMemExportToShareableHandle", [&] {
    SharedAllocation shared;
    const Status status = allocation->manager->share(allocation->mappedAt, &shared);
    if (!ok(status)) return managedResult("cuMemExportToShareableHandle", status);
    if (shared.pieces.size() != 1) return CUDA_ERROR_UNKNOWN; // a handle's region shares as one piece
    *static_cast<int*>(shareable) = shared.pieces.front().descriptor.release();
    return CUDA_SUCCESS;
  });
}
