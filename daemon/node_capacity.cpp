#include "node_capacity.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace mqx::daemon {
namespace {

constexpr std::uint64_t kMinimumReserveBytes = std::uint64_t{3} << 29; // 1.5 GiB

// dlopen'ed library, closed with the object.
struct LibraryCloser {
  void operator()(void* library) const {
    if (library != nullptr) dlclose(library);
  }
};
using Library = std::unique_ptr<void, LibraryCloser>;

template <typename Function> Function symbol(void* library, const char* name) {
  return reinterpret_cast<Function>(dlsym(library, name));
}

// The first entry of CUDA_VISIBLE_DEVICES, "" when unset.
std::string firstVisibleDevice() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return {};
  std::string first(visible);
  first = first.substr(0, first.find(','));
  return first;
}

// NVML's C API, the few entry points used (nvml.h: nvmlReturn_t is an int,
// 0 is NVML_SUCCESS; nvmlMemory_t is three unsigned long long).
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlDevice = void*;

std::optional<DeviceMemory> probeNvml(std::string* why) {
  Library library(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    *why += "no libnvidia-ml.so.1";
    return std::nullopt;
  }
  auto init = symbol<int (*)()>(library.get(), "nvmlInit_v2");
  auto shutdown = symbol<int (*)()>(library.get(), "nvmlShutdown");
  auto byIndex = symbol<int (*)(unsigned, NvmlDevice*)>(library.get(), "nvmlDeviceGetHandleByIndex_v2");
  auto byUuid = symbol<int (*)(const char*, NvmlDevice*)>(library.get(), "nvmlDeviceGetHandleByUUID");
  auto memoryInfo = symbol<int (*)(NvmlDevice, NvmlMemory*)>(library.get(), "nvmlDeviceGetMemoryInfo");
  auto name = symbol<int (*)(NvmlDevice, char*, unsigned)>(library.get(), "nvmlDeviceGetName");
  if (!init || !shutdown || !byIndex || !byUuid || !memoryInfo) {
    *why += "libnvidia-ml.so.1 lacks an entry point";
    return std::nullopt;
  }
  if (const int error = init(); error != 0) {
    *why += fmt::format("nvmlInit failed ({})", error);
    return std::nullopt;
  }
  std::optional<DeviceMemory> result;
  NvmlDevice device = nullptr;
  const std::string visible = firstVisibleDevice();
  // NVML numbers devices in PCI order; CUDA does too with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID, and on a node of one GPU model the order
  // does not change the size.
  const int found = visible.starts_with("GPU-") ? byUuid(visible.c_str(), &device)
                                                : byIndex(static_cast<unsigned>(std::atoi(visible.c_str())), &device);
  NvmlMemory memory{};
  if (found == 0 && memoryInfo(device, &memory) == 0 && memory.total != 0) {
    char deviceName[96] = {};
    if (name != nullptr) name(device, deviceName, sizeof deviceName);
    result = DeviceMemory{memory.total, memory.used, fmt::format("NVML, {}", deviceName)};
  } else {
    *why += fmt::format("NVML has no device '{}'", visible.empty() ? "0" : visible);
  }
  shutdown();
  return result;
}

std::optional<DeviceMemory> probeDriver(std::string* why) {
  Library library(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    *why += "; no libcuda.so.1";
    return std::nullopt;
  }
  auto init = symbol<int (*)(unsigned)>(library.get(), "cuInit");
  auto deviceGet = symbol<int (*)(int*, int)>(library.get(), "cuDeviceGet");
  auto totalMemory = symbol<int (*)(std::size_t*, int)>(library.get(), "cuDeviceTotalMem_v2");
  if (!init || !deviceGet || !totalMemory) {
    *why += "; libcuda.so.1 lacks an entry point";
    return std::nullopt;
  }
  int device = 0;
  std::size_t total = 0;
  if (const int error = init(0); error != 0) {
    *why += fmt::format("; cuInit failed ({})", error);
    return std::nullopt;
  }
  if (deviceGet(&device, 0) != 0 || totalMemory(&total, device) != 0 || total == 0) {
    *why += "; the driver has no device 0";
    return std::nullopt;
  }
  return DeviceMemory{total, 0, "CUDA driver, device 0"};
}

} // namespace

std::uint64_t deviceReserveBytes(std::uint64_t totalBytes) { return std::max(kMinimumReserveBytes, totalBytes / 20); }

NodeCapacity nodeCapacity(const Config& config, const DeviceMemoryProbe& probe) {
  if (config.daemonCapacity != 0) return {config.daemonCapacity, "daemon.capacity"};
  if (config.deviceMemoryLimit != 0) return {config.deviceMemoryLimit, "memory.device_memory_limit"};
  if (config.backend == BackendKind::Sim) return {config.simCapacity, "sim.capacity (backend.kind = sim)"};
  const std::optional<DeviceMemory> device = probe();
  if (!device) {
    if (config.backend == BackendKind::Cuda)
      throw std::runtime_error("backend.kind = cuda but mqxd could not read the device's memory; set "
                               "daemon.capacity");
    return {config.simCapacity, "sim.capacity (no GPU found)"};
  }
  const std::uint64_t reserve = deviceReserveBytes(device->totalBytes);
  if (device->totalBytes <= reserve)
    throw std::runtime_error(fmt::format("the device has {} MiB, not more than the {} MiB reserve; set daemon.capacity",
                                         device->totalBytes >> 20, reserve >> 20));
  return {device->totalBytes - reserve, fmt::format("the device's {} MiB less a {} MiB reserve ({})",
                                                    device->totalBytes >> 20, reserve >> 20, device->source)};
}

std::optional<DeviceMemory> probeDeviceMemory(std::string* why) {
  std::string tried;
  auto result = probeNvml(&tried);
  if (!result) result = probeDriver(&tried);
  if (why != nullptr) *why = tried;
  return result;
}

} // namespace mqx::daemon
