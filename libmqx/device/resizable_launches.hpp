// ResizableLaunches: which kernels may be launched with the launch
// optimizer's parameters, and the path of their launches through a
// LaunchTuner (docs/architecture.md decision 11; docs/kernelopt.md, "Launch
// service"). Changing a kernel's grid or block size is only safe for kernels
// written for it (grid-stride loops), so only kernels declared resizable, by
// name in the configuration (kernelopt.resizable_kernels) or through the
// advice API (mqx_declare_resizable), are tuned; every other launch keeps its
// parameters. Backend-independent: the caller supplies the kernel's
// resources (cuFuncGetAttribute on the GPU, the registration on sim) and a
// way to observe completion.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.hpp"
#include "device/device_backend.hpp"
#include "device/launch_tuner.hpp"

namespace mqx::device {

// A kernel's own resources, as its binary declares them.
struct KernelProperties {
  std::string name;
  int registersPerThread = 0;
  int staticSharedBytes = 0;
  int maxThreadsPerBlock = 0; // 0: the device's limit
};

class ResizableLaunches {
public:
  // True once the launch it was given for has completed on the device.
  using CompletionProbe = std::function<bool()>;

  ResizableLaunches(const std::vector<std::string>& resizableNames, std::shared_ptr<LaunchTuner> tuner);
  ~ResizableLaunches();
  ResizableLaunches(const ResizableLaunches&) = delete;
  ResizableLaunches& operator=(const ResizableLaunches&) = delete;

  // The advice API: `function` is resizable whatever its name.
  void declare(FunctionHandle function);
  // The advice API by name: `name` is resizable (as the configuration's list).
  void declareName(std::string name);
  bool isResizable(FunctionHandle function, std::string_view name) const;

  // Asks the tuner for `launch` of a resizable kernel and, when it answers,
  // rewrites the launch's grid and block. Only one-dimensional launches are
  // tuned (a grid-stride loop over x). Returns the ticket to hand to
  // launched() (0: nothing to report); `kernelsSolved`, when given, the
  // kernels the optimizer placed together (0: the launch kept its own).
  std::uint64_t tune(KernelLaunch& launch, const KernelProperties& kernel, const kernelopt::DeviceAttributes& device,
                     unsigned* kernelsSolved = nullptr);
  // After the launch of `ticket` was enqueued: `probe` says when it
  // completed. A null probe means it did not launch (or already completed).
  void launched(std::uint64_t ticket, CompletionProbe probe);
  // Reports the completed launches to the tuner (also done by tune()).
  void poll();
  // Launches still counted as running.
  std::size_t pending() const;

private:
  struct Pending {
    std::uint64_t ticket;
    CompletionProbe probe;
  };
  void pollLocked(std::vector<std::uint64_t>* done);

  std::set<std::string, std::less<>> names_;
  std::shared_ptr<LaunchTuner> tuner_;
  mutable std::mutex mutex_;
  std::set<FunctionHandle> declared_;
  std::vector<Pending> pending_;
};

} // namespace mqx::device
