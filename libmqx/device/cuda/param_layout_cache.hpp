// ParamLayoutCache: each kernel's parameter offsets and sizes, asked of the
// driver once (cuFuncGetParamInfo, or cuKernelGetParamInfo when the handle is
// a CUkernel, as cudart 12+ passes to cuLaunchKernel) and then served from a
// map under a reader lock: the core asks on every launch.
#pragma once

#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

class ParamLayoutCache {
public:
  explicit ParamLayoutCache(const DriverApi& api) : api_(api) {}

  // NotSupported when the driver cannot tell (remembered too).
  Status get(CUfunction function, std::vector<ParamInfo>* layout);

private:
  struct Entry {
    Status status = Status::Success;
    std::vector<ParamInfo> layout;
  };

  Entry query(CUfunction function) const;

  const DriverApi& api_;
  std::shared_mutex mutex_;
  std::unordered_map<CUfunction, Entry> entries_;
};

} // namespace mqx::device::cuda
