// CudaLaunchTuning: launch tuning on the GPU (docs/kernelopt.md, "Launch
// service"). ResizableLaunches decides and rewrites; this adds what only the
// driver knows: a kernel's name and resources (cuFuncGetName and
// cuFuncGetAttribute, asked once per function), the device's attributes,
// and completion (an event recorded after the launch, queried later: a
// fence of the FenceTable may be coalesced and then read as pending until
// the stream's next fence).
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/cuda/driver_api.hpp"
#include "device/resizable_launches.hpp"

namespace mqx::device::cuda {

class CudaLaunchTuning {
public:
  // `resizableKernels`: the kernels resizable by name (kernelopt.resizable_kernels).
  CudaLaunchTuning(const DriverApi& api, const std::vector<std::string>& resizableKernels,
                   std::shared_ptr<LaunchTuner> tuner);

  ResizableLaunches& launches() { return launches_; }
  // Tunes `launch` of `function` when it is resizable; the ticket for
  // launched() (0: not tuned).
  std::uint64_t prepare(KernelLaunch& launch, CUfunction function);
  // After the launch (successful or not) on `stream`.
  void launched(std::uint64_t ticket, CUstream stream, bool succeeded);

private:
  struct Kernel {
    bool known = false;            // the driver answered
    CUfunction resolved = nullptr; // the CUfunction of a CUkernel handle
    KernelProperties properties;
  };
  const Kernel& kernelOf(CUfunction function);
  Kernel query(CUfunction function) const;
  bool deviceAttributes(kernelopt::DeviceAttributes* attributes) const;

  const DriverApi& api_;
  ResizableLaunches launches_;
  std::shared_mutex mutex_;
  std::unordered_map<CUfunction, Kernel> kernels_;
};

} // namespace mqx::device::cuda
