#include "node_capacity.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "ipc/node_state.hpp"

namespace mqx::daemon {
namespace {

using ipc::kMaxDevices;

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

// NVML's C API, the few entry points used (nvml.h: nvmlReturn_t is an int,
// 0 is NVML_SUCCESS; nvmlMemory_t is three unsigned long long).
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlDevice = void*;

std::vector<DeviceMemory> probeNvml(std::string* why) {
  Library library(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    *why += "no libnvidia-ml.so.1";
    return {};
  }
  auto init = symbol<int (*)()>(library.get(), "nvmlInit_v2");
  auto shutdown = symbol<int (*)()>(library.get(), "nvmlShutdown");
  auto count = symbol<int (*)(unsigned*)>(library.get(), "nvmlDeviceGetCount_v2");
  auto byIndex = symbol<int (*)(unsigned, NvmlDevice*)>(library.get(), "nvmlDeviceGetHandleByIndex_v2");
  auto uuid = symbol<int (*)(NvmlDevice, char*, unsigned)>(library.get(), "nvmlDeviceGetUUID");
  auto memoryInfo = symbol<int (*)(NvmlDevice, NvmlMemory*)>(library.get(), "nvmlDeviceGetMemoryInfo");
  auto name = symbol<int (*)(NvmlDevice, char*, unsigned)>(library.get(), "nvmlDeviceGetName");
  if (!init || !shutdown || !count || !byIndex || !uuid || !memoryInfo) {
    *why += "libnvidia-ml.so.1 lacks an entry point";
    return {};
  }
  if (const int error = init(); error != 0) {
    *why += fmt::format("nvmlInit failed ({})", error);
    return {};
  }
  // NVML numbers devices in PCI order; CUDA does too with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID (docs/daemon.md: index entries of
  // CUDA_VISIBLE_DEVICES are read as NVML's indices; UUIDs are the same
  // either way).
  std::vector<DeviceMemory> all;
  unsigned devices = 0;
  if (count(&devices) != 0) devices = 0;
  for (unsigned i = 0; i < devices; ++i) {
    NvmlDevice device = nullptr;
    NvmlMemory memory{};
    char identity[96] = {};
    if (byIndex(i, &device) != 0 || memoryInfo(device, &memory) != 0 || uuid(device, identity, sizeof identity) != 0)
      continue;
    char deviceName[96] = {};
    if (name != nullptr) name(device, deviceName, sizeof deviceName);
    all.push_back({memory.total, memory.used, fmt::format("NVML, {}", deviceName), identity});
  }
  shutdown();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  auto result = visibleDevices(all, visible);
  if (result.empty())
    *why += all.empty() ? std::string("NVML lists no device")
                        : fmt::format("NVML lists {} devices, CUDA_VISIBLE_DEVICES='{}' shows none", all.size(),
                                      visible != nullptr ? visible : "");
  return result;
}

std::vector<DeviceMemory> probeDriver(std::string* why) {
  Library library(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    *why += "; no libcuda.so.1";
    return {};
  }
  struct CudaUuid {
    unsigned char bytes[16];
  };
  auto init = symbol<int (*)(unsigned)>(library.get(), "cuInit");
  auto count = symbol<int (*)(int*)>(library.get(), "cuDeviceGetCount");
  auto deviceGet = symbol<int (*)(int*, int)>(library.get(), "cuDeviceGet");
  auto totalMemory = symbol<int (*)(std::size_t*, int)>(library.get(), "cuDeviceTotalMem_v2");
  auto uuid = symbol<int (*)(CudaUuid*, int)>(library.get(), "cuDeviceGetUuid_v2");
  if (uuid == nullptr) uuid = symbol<int (*)(CudaUuid*, int)>(library.get(), "cuDeviceGetUuid");
  auto name = symbol<int (*)(char*, int, int)>(library.get(), "cuDeviceGetName");
  if (!init || !count || !deviceGet || !totalMemory || !uuid) {
    *why += "; libcuda.so.1 lacks an entry point";
    return {};
  }
  if (const int error = init(0); error != 0) {
    *why += fmt::format("; cuInit failed ({})", error);
    return {};
  }
  // The driver applies CUDA_VISIBLE_DEVICES itself.
  int devices = 0;
  if (count(&devices) != 0) devices = 0;
  std::vector<DeviceMemory> result;
  for (int i = 0; i < devices; ++i) {
    int device = 0;
    std::size_t total = 0;
    CudaUuid identity{};
    if (deviceGet(&device, i) != 0 || totalMemory(&total, device) != 0 || total == 0 || uuid(&identity, device) != 0)
      continue;
    char deviceName[96] = {};
    if (name != nullptr) name(deviceName, sizeof deviceName, device);
    result.push_back({total, 0, fmt::format("CUDA driver, {}", deviceName), formatGpuUuid(identity.bytes)});
  }
  if (result.empty()) *why += "; the driver lists no device";
  return result;
}

} // namespace

std::string formatGpuUuid(const unsigned char (&bytes)[16]) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += fmt::format("{:02x}", bytes[i]);
  }
  return text;
}

std::vector<DeviceMemory> visibleDevices(const std::vector<DeviceMemory>& all, const char* visible) {
  if (visible == nullptr) return all;
  std::vector<DeviceMemory> shown;
  std::vector<std::size_t> taken;
  std::stringstream entries(visible);
  for (std::string entry; std::getline(entries, entry, ',');) {
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    std::optional<std::size_t> found;
    if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) {
      if (entry.size() <= 4 && std::stoul(entry) < all.size()) found = std::stoul(entry);
    } else if (entry.starts_with("GPU-")) {
      // A unique prefix, as CUDA accepts.
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (!all[i].identity.starts_with(entry)) continue;
        if (found) {
          found.reset();
          break;
        }
        found = i;
      }
    }
    if (!found) break; // CUDA ignores the entries from the first invalid one on
    if (std::find(taken.begin(), taken.end(), *found) != taken.end()) continue;
    taken.push_back(*found);
    shown.push_back(all[*found]);
  }
  return shown;
}

std::uint64_t deviceReserveBytes(std::uint64_t totalBytes) { return std::max(kMinimumReserveBytes, totalBytes / 20); }

std::vector<NodeDevice> nodeDevices(const Config& config, const DeviceProbe& probe) {
  // A budget set for every device, and where it comes from.
  std::uint64_t set = 0;
  std::string setBy;
  if (config.daemonCapacity != 0) {
    set = config.daemonCapacity;
    setBy = "daemon.capacity";
  } else if (config.deviceMemoryLimit != 0) {
    set = config.deviceMemoryLimit;
    setBy = "memory.device_memory_limit";
  }
  auto simulated = [&](const std::string& why) {
    std::vector<NodeDevice> devices;
    for (unsigned i = 0; i < std::min(config.simDevices, kMaxDevices); ++i)
      devices.push_back({fmt::format("sim-{}", i), set != 0 ? set : config.simCapacity,
                         set != 0 ? setBy : fmt::format("sim.capacity ({})", why)});
    return devices;
  };
  if (config.backend == BackendKind::Sim) return simulated("backend.kind = sim");
  std::vector<DeviceMemory> gpus = probe();
  if (gpus.empty()) {
    if (config.backend == BackendKind::Auto) return simulated("no GPU found");
    if (set == 0)
      throw std::runtime_error("backend.kind = cuda but mqxd could not read the devices' memory; set "
                               "daemon.capacity");
    // A budget without a GPU to name: one device that exports nothing.
    return {{"device-0", set, setBy + " (no GPU could be listed)"}};
  }
  std::vector<NodeDevice> devices;
  for (const DeviceMemory& gpu : gpus) {
    if (devices.size() == kMaxDevices) break; // the segment's table; mqxd's start line says how many it kept
    if (set != 0) {
      devices.push_back({gpu.identity, set, fmt::format("{} ({})", setBy, gpu.source)});
      continue;
    }
    const std::uint64_t reserve = deviceReserveBytes(gpu.totalBytes);
    if (gpu.totalBytes <= reserve)
      throw std::runtime_error(fmt::format("the device {} has {} MiB, not more than the {} MiB reserve; set "
                                           "daemon.capacity",
                                           gpu.identity, gpu.totalBytes >> 20, reserve >> 20));
    devices.push_back({gpu.identity, gpu.totalBytes - reserve,
                       fmt::format("the device's {} MiB less a {} MiB reserve ({})", gpu.totalBytes >> 20,
                                   reserve >> 20, gpu.source)});
  }
  return devices;
}

std::vector<DeviceMemory> probeDevices(std::string* why) {
  std::string tried;
  auto result = probeNvml(&tried);
  if (result.empty()) result = probeDriver(&tried);
  if (why != nullptr) *why = tried;
  return result;
}

} // namespace mqx::daemon
