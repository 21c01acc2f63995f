// The node's devices and the budget of each (docs/daemon.md, "Capacity" and
// "Several GPUs"): on a GPU host every GPU that NVML (or the driver) lists
// and CUDA_VISIBLE_DEVICES lets mqxd see, each with its memory less a reserve
// for what the driver and the processes' contexts take outside the budget;
// on the simulated device sim.devices devices of sim.capacity. The decision
// is a pure function of the configuration and what a probe says of the
// devices, so tests inject devices.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace mqx::daemon {

// A GPU as mqxd learned it without a CUDA context.
struct DeviceMemory {
  std::uint64_t totalBytes = 0;
  std::uint64_t usedBytes = 0; // by any process at the time of the probe (NVML only; else 0)
  std::string source;          // e.g. "NVML, NVIDIA H100 80GB HBM3"
  std::string identity;        // the UUID as `nvidia-smi -L` prints it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
};

// The reserve kept out of a device's budget on a GPU of `totalBytes`: the
// larger of 1.5 GiB and 5% (docs/daemon.md says why).
std::uint64_t deviceReserveBytes(std::uint64_t totalBytes);

// One device of the node as mqxd lists it in the segment.
struct NodeDevice {
  std::string identity;
  std::uint64_t capacity = 0;
  std::string origin; // one phrase for mqxd's start line
};

// The GPUs mqxd sees, in the order of the node's device indices; empty when
// none can be read.
using DeviceProbe = std::function<std::vector<DeviceMemory>()>;

// The node's devices. backend.kind sim: sim.devices devices "sim-<n>";
// cuda: the probe's GPUs (a std::runtime_error when none can be read and no
// budget is set); auto: the GPUs when there are any, else the simulated
// devices (no GPU: the processes run on the simulated device). Each one's
// budget: daemon.capacity, else memory.device_memory_limit, else its
// memory less deviceReserveBytes (a GPU) or sim.capacity. The probe is only
// called when needed; at most kMaxDevices devices are kept.
std::vector<NodeDevice> nodeDevices(const Config& config, const DeviceProbe& probe);

// The GPUs through NVML (libnvidia-ml.so.1), else the driver (libcuda.so.1:
// cuInit, cuDeviceGetCount, cuDeviceGetUuid_v2, cuDeviceTotalMem, no
// context); both loaded with dlopen, so mqxd needs neither to build or run.
// NVML's are filtered by CUDA_VISIBLE_DEVICES (visibleDevices); the driver
// applies it itself. Empty without a driver or device; `why`, when given,
// says what was tried.
std::vector<DeviceMemory> probeDevices(std::string* why = nullptr);

// The devices of `all` (NVML's, in its index order) that a
// CUDA_VISIBLE_DEVICES of `visible` (null: unset) shows, in its order: each
// entry a decimal index or a UUID ("GPU-...", or a unique prefix of one);
// as CUDA does, the list ends at the first entry that names no device, and
// an entry named twice counts once.
std::vector<DeviceMemory> visibleDevices(const std::vector<DeviceMemory>& all, const char* visible);

// The 16 bytes of a CUDA UUID (cuDeviceGetUuid_v2) as `nvidia-smi -L` prints
// them: "GPU-" and 8-4-4-4-12 lower-case hexadecimal digits.
std::string formatGpuUuid(const unsigned char (&bytes)[16]);

} // namespace mqx::daemon
