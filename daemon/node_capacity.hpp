// The node's capacity when daemon.capacity is 0 (docs/daemon.md, "Capacity"):
// the device's memory less a reserve for what the driver and the processes'
// contexts take outside the node budget on a GPU, sim.capacity on the
// simulated device. The decision is a pure function of the configuration and
// what a probe says of the device, so tests inject device totals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "config/config.hpp"

namespace mqx::daemon {

// A GPU's memory as mqxd learned it without a CUDA context.
struct DeviceMemory {
  std::uint64_t totalBytes = 0;
  std::uint64_t usedBytes = 0; // by any process at the time of the probe (NVML only; else 0)
  std::string source;          // e.g. "NVML, NVIDIA H100 80GB HBM3"
};

// The reserve kept out of the node budget on a GPU of `totalBytes`: the
// larger of 1.5 GiB and 5% (docs/daemon.md says why).
std::uint64_t deviceReserveBytes(std::uint64_t totalBytes);

struct NodeCapacity {
  std::uint64_t bytes = 0;
  std::string origin; // one phrase for mqxd's start line
};

using DeviceMemoryProbe = std::function<std::optional<DeviceMemory>()>;

// daemon.capacity, else memory.device_memory_limit, else by backend.kind:
// sim: sim.capacity; cuda: the device's memory less the reserve (a
// std::runtime_error when no device can be read); auto: the same when a
// device is found, else sim.capacity (no GPU: the processes run on the
// simulated device). The probe is only called when needed.
NodeCapacity nodeCapacity(const Config& config, const DeviceMemoryProbe& probe);

// The device's memory through NVML (libnvidia-ml.so.1), else the driver
// (libcuda.so.1: cuInit and cuDeviceTotalMem, no context); both loaded with
// dlopen, so mqxd needs neither to build or run. The device is the first of
// CUDA_VISIBLE_DEVICES (an index or a GPU UUID), else device 0. nullopt
// without a driver or device; `why`, when given, says what was tried.
std::optional<DeviceMemory> probeDeviceMemory(std::string* why = nullptr);

} // namespace mqx::daemon
