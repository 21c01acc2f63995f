#include "hook/pointer_location.hpp"

#include "hook/runtime.hpp"

namespace mqx::hook {

Where locate(CUdeviceptr address) {
  if (Runtime::instance().owner(address) != nullptr) return Where::Managed;
  const auto* api = Runtime::instance().driver();
  unsigned type = 0;
  // Pageable host memory is unknown to the driver: the query fails.
  if (api != nullptr && api->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) == CUDA_SUCCESS &&
      (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED || type == CU_MEMORYTYPE_ARRAY)) {
    return Where::Device;
  }
  return Where::Host;
}

void beforeHostWrite(const void* destination, std::size_t bytes) {
  MemoryManager* manager = Runtime::instance().hostManager();
  if (bytes == 0 || manager == nullptr || !manager->hasProtectedHostMemory()) return;
  manager->prepareHostWrite(const_cast<void*>(destination), bytes);
}

} // namespace mqx::hook
