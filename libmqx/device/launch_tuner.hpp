// LaunchTuner: where a resizable kernel's launch parameters come from when
// kernels of several queries share the GPU (docs/architecture.md decision 11).
// The backends' launch paths (ResizableLaunches) only know this interface,
// which is why it lives in the device layer; the multi-process mode answers
// it through mqxd's launch service (ipc/launch_tuning_client.hpp), as
// DeviceBudget is answered through SharedDeviceBudget. No answer means "keep
// your own".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernelopt/device_attributes.hpp"

namespace mqx::device {

// What the launch optimizer needs to know of one launch of a resizable kernel.
struct TuningRequest {
  std::string kernelName;
  int registersPerThread = 0;
  int sharedMemoryPerBlock = 0; // static plus dynamic bytes
  int maxThreadsPerBlock = 0;   // the kernel's own limit (0: the device's)
  int ownThreadsPerBlock = 0;   // the block size the application asked for
  std::uint64_t threads = 0;    // the threads the application's grid launches
  kernelopt::DeviceAttributes device;
  // The node device (NodeMembership::device()) the kernel runs on: mqxd's
  // launch service solves each device's kernels apart.
  std::uint32_t nodeDevice = 0;
};

// The optimizer's answer: a one-dimensional grid and block.
struct TunedLaunch {
  std::uint64_t ticket = 0; // names this launch in finished()
  unsigned gridBlocks = 0;
  unsigned threadsPerBlock = 0;
  unsigned kernelsSolved = 0; // kernels the optimizer placed together, this one included
};

class LaunchTuner {
public:
  virtual ~LaunchTuner() = default;
  // The parameters to launch with; nothing when the launch keeps its own
  // (no optimizer reachable in time, or the kernel fits nowhere). `ticket`
  // is set either way when the optimizer counts the kernel as pending.
  virtual std::optional<TunedLaunch> tune(const TuningRequest& request, std::uint64_t* ticket) = 0;
  // The kernel launched under `ticket` completed (or was never launched).
  virtual void finished(std::uint64_t ticket) = 0;
};

} // namespace mqx::device
