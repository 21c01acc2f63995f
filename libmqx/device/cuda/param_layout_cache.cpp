#include "device/cuda/param_layout_cache.hpp"

#include <mutex>

#include "common/log.hpp"

namespace mqx::device::cuda {
namespace {

// Walks parameter indices until the driver says the index is past the end
// (CUDA_ERROR_INVALID_VALUE). Any other error on the first index means the
// handle is not of the kind `getInfo` takes.
template <typename Handle, typename GetInfo>
CUresult walk(GetInfo getInfo, Handle handle, std::vector<ParamInfo>* layout) {
  layout->clear();
  if (getInfo == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0;
    std::size_t size = 0;
    CUresult result = getInfo(handle, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) return CUDA_SUCCESS;
    if (result != CUDA_SUCCESS) return result;
    layout->push_back(ParamInfo{offset, size});
  }
}

} // namespace

ParamLayoutCache::Entry ParamLayoutCache::query(CUfunction function) const {
  Entry entry;
  CUresult asFunction = walk(api_.cuFuncGetParamInfo, function, &entry.layout);
  if (asFunction == CUDA_SUCCESS && !entry.layout.empty()) return entry;
  // An empty answer may also mean "this is a CUkernel": ask that way too, and
  // keep what has parameters.
  std::vector<ParamInfo> asKernelLayout;
  CUresult asKernel = walk(api_.cuKernelGetParamInfo, reinterpret_cast<CUkernel>(function), &asKernelLayout);
  if (asKernel == CUDA_SUCCESS && !asKernelLayout.empty()) {
    entry.layout = std::move(asKernelLayout);
    return entry;
  }
  if (asFunction == CUDA_SUCCESS || asKernel == CUDA_SUCCESS) return entry; // no parameters
  log(LogLevel::Info, "no parameter layout for kernel {}: {}", static_cast<const void*>(function),
      api_.describe("cuFuncGetParamInfo", asFunction));
  entry.status = Status::NotSupported;
  return entry;
}

Status ParamLayoutCache::get(CUfunction function, std::vector<ParamInfo>* layout) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = entries_.find(function); it != entries_.end()) {
      *layout = it->second.layout;
      return it->second.status;
    }
  }
  Entry entry = query(function);
  std::unique_lock lock(mutex_);
  const Entry& stored = entries_.try_emplace(function, std::move(entry)).first->second;
  *layout = stored.layout;
  return stored.status;
}

} // namespace mqx::device::cuda
