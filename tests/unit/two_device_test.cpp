// Two simulated devices in one process (docs/interposer.md, "Several
// devices"): random sequences of allocations on either device, copies within
// and across devices (DeviceManagers::copyBetween), memsets, kernels and host
// buffer writes, each device with a budget far below its share of the live
// data, must give byte-identical results to a plain host model. Device 0's
// manager write-protects host sources (copy-on-write); device 1's copies its
// sources at copy time, as the interposer configures a second device.
// Seeded; the seed is printed on failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/device_managers.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "sim_kernels.hpp"

namespace mqx::test {
namespace {

constexpr int kDevices = 2;

struct Device {
  explicit Device(const Config& config) : backend(embedded::simBackendOptions(config)), kernels(backend) {}
  device::SimBackend backend;
  SimKernels kernels;
  std::unique_ptr<MemoryManager> manager;
};

struct Allocation {
  int device = 0;
  std::vector<std::uint8_t> bytes; // the reference: what the region holds
};

class TwoDeviceSequence {
public:
  TwoDeviceSequence(const Config& config, std::uint64_t seed) : random_(seed) {
    for (int ordinal = 0; ordinal < kDevices; ++ordinal) {
      devices_.push_back(std::make_unique<Device>(config));
      ManagerOptions options = embedded::managerOptions(config);
      options.copyOnWrite = ordinal == 0;
      devices_.back()->manager = std::make_unique<MemoryManager>(options, devices_.back()->backend);
      managers_.add(ordinal, devices_.back()->manager.get());
    }
    hook::registerHostMemoryManager(managers_.first());
  }
  ~TwoDeviceSequence() {
    for (auto& buffer : buffers_)
      std::free(buffer.first);
    // No longer watched before the manager goes: its own frees must not
    // reach it half destroyed.
    hook::registerHostMemoryManager(nullptr);
    for (auto& device : devices_)
      device->manager.reset();
  }

  std::string run(int steps) {
    for (int step = 0; step < steps; ++step)
      if (std::string error = this->step(); !error.empty()) return "step " + std::to_string(step) + ": " + error;
    for (auto& [address, allocation] : model_)
      if (std::string error = check(address, 0, allocation.bytes.size()); !error.empty())
        return "final check: " + error;
    return {};
  }

  std::uint64_t evictions(int ordinal) const { return managers_.on(ordinal)->statistics().evictions; }
  std::uint64_t crossCopies() const { return crossCopies_; }

private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_); }
  std::size_t between(std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(random_);
  }
  DevicePtr anyRegion() {
    auto it = model_.begin();
    std::advance(it, pick(model_.size()));
    return it->first;
  }
  DevicePtr anyRegionOn(int device) {
    std::vector<DevicePtr> candidates;
    for (auto& [address, allocation] : model_)
      if (allocation.device == device) candidates.push_back(address);
    return candidates.empty() ? 0 : candidates[pick(candidates.size())];
  }
  MemoryManager& managerOf(DevicePtr address) {
    MemoryManager* owner = managers_.owner(address);
    EXPECT_EQ(owner, managers_.on(model_[address].device)) << "the owner of a region is the manager of its device";
    return *owner;
  }

  std::string step() {
    const std::size_t choice = model_.empty() ? 0 : pick(100);
    if (choice < 12 && model_.size() < 16) return allocate();
    if (choice < 16 && model_.size() > 3) return release();
    if (choice < 32) return copyToDevice();
    if (choice < 42) return copyToHost();
    if (choice < 62) return copyOnDevice();
    if (choice < 70) return memset();
    if (choice < 90) return transform();
    return touchHostBuffer();
  }

  std::string allocate() {
    const int device = static_cast<int>(pick(kDevices));
    const std::size_t bytes = pick(4) == 0 ? between(1, 4096) : between(1, 512 * 1024);
    DevicePtr address = 0;
    if (Status status = managers_.on(device)->allocate(bytes, &address); !ok(status))
      return "allocate on device " + std::to_string(device) + ": " + std::string(toString(status));
    model_[address] = Allocation{device, std::vector<std::uint8_t>(bytes, 0)};
    return {};
  }

  std::string release() {
    const DevicePtr address = anyRegion();
    if (Status status = managerOf(address).free(address); !ok(status)) return "free: " + std::string(toString(status));
    model_.erase(address);
    return {};
  }

  std::string copyToDevice() {
    const DevicePtr address = anyRegion();
    auto& expected = model_[address].bytes;
    const std::size_t offset = pick(3) == 0 ? pick(expected.size()) : 0;
    const std::size_t bytes = between(1, expected.size() - offset);
    auto* buffer = static_cast<std::uint8_t*>(std::malloc(bytes));
    for (std::size_t i = 0; i < bytes; ++i)
      buffer[i] = static_cast<std::uint8_t>(random_());
    buffers_.emplace_back(buffer, bytes);
    std::memcpy(expected.data() + offset, buffer, bytes);
    const Status status = managerOf(address).copyHostToDevice(address + offset, buffer, bytes, 0, pick(2) == 0);
    return ok(status) ? std::string{} : "copyHostToDevice: " + std::string(toString(status));
  }

  std::string check(DevicePtr address, std::size_t offset, std::size_t bytes) {
    std::vector<std::uint8_t> actual(bytes, 0xEE);
    // As the interposer does before every device-to-host copy
    // (beforeHostWrite): the destination may share a page with a lazy
    // copy's source that the first device's manager protects, and another
    // device's manager writing it would fault.
    managers_.first()->prepareHostWrite(actual.data(), bytes);
    const Status status = managerOf(address).copyDeviceToHost(actual.data(), address + offset, bytes, 0, true);
    if (!ok(status)) return "copyDeviceToHost: " + std::string(toString(status));
    const Allocation& expected = model_[address];
    for (std::size_t i = 0; i < bytes; ++i)
      if (actual[i] != expected.bytes[offset + i])
        return "mismatch on device " + std::to_string(expected.device) + " in a region of " +
               std::to_string(expected.bytes.size()) + " bytes at offset " + std::to_string(offset + i);
    return {};
  }

  std::string copyToHost() {
    const DevicePtr address = anyRegion();
    const std::size_t size = model_[address].bytes.size();
    const std::size_t offset = pick(2) == 0 ? pick(size) : 0;
    return check(address, offset, between(1, size - offset));
  }

  // Half of them across devices: the peer copies of cuMemcpyPeer and of
  // cuMemcpyDtoD between two devices' allocations.
  std::string copyOnDevice() {
    const DevicePtr to = anyRegion();
    const DevicePtr from = anyRegion();
    if (to == from) return {};
    auto& target = model_[to].bytes;
    auto& source = model_[from].bytes;
    const std::size_t offsetTo = pick(3) == 0 ? pick(target.size()) : 0;
    const std::size_t offsetFrom = pick(3) == 0 ? pick(source.size()) : 0;
    const std::size_t bytes = std::min(target.size() - offsetTo, source.size() - offsetFrom);
    std::memcpy(target.data() + offsetTo, source.data() + offsetFrom, bytes);
    MemoryManager& destination = managerOf(to);
    MemoryManager& origin = managerOf(from);
    Status status = Status::Success;
    if (&destination == &origin) {
      status = destination.copyDeviceToDevice(to + offsetTo, from + offsetFrom, bytes, 0, pick(2) == 0);
    } else {
      ++crossCopies_;
      // A small bounce buffer half the time: copies of several chunks reuse
      // it while the earlier chunk may still be a lazy copy's source.
      const std::size_t bounce = pick(2) == 0 ? between(4096, 64 * 1024) : DeviceManagers::kBounceBytes;
      status = DeviceManagers::copyBetween(destination, to + offsetTo, origin, from + offsetFrom, bytes, bounce);
    }
    return ok(status) ? std::string{} : "copy on device: " + std::string(toString(status));
  }

  std::string memset() {
    const DevicePtr address = anyRegion();
    auto& expected = model_[address].bytes;
    const std::size_t first = pick(expected.size());
    const std::size_t count = between(1, expected.size() - first);
    const auto pattern = static_cast<std::uint8_t>(random_());
    std::memset(expected.data() + first, pattern, count);
    const Status status = managerOf(address).memset(address + first, pattern, 1, count, 0, pick(2) == 0);
    return ok(status) ? std::string{} : "memset: " + std::string(toString(status));
  }

  // A kernel on one device over two regions of that device.
  std::string transform() {
    const int device = static_cast<int>(pick(kDevices));
    const DevicePtr in = anyRegionOn(device);
    const DevicePtr out = anyRegionOn(device);
    if (in == 0) return {};
    auto& source = model_[in].bytes;
    auto& target = model_[out].bytes;
    const std::size_t offsetIn = pick(3) == 0 ? pick(source.size()) : 0;
    const std::size_t offsetOut = in == out ? offsetIn : (pick(3) == 0 ? pick(target.size()) : 0);
    const std::uint64_t n = std::min(source.size() - offsetIn, target.size() - offsetOut);
    const auto seed = static_cast<std::uint8_t>(random_());
    transformReference(source.data() + offsetIn, target.data() + offsetOut, n, seed);
    void* inPointer = reinterpret_cast<void*>(in + offsetIn);
    void* outPointer = reinterpret_cast<void*>(out + offsetOut);
    std::uint64_t count = n;
    std::uint8_t seedValue = seed;
    void* params[] = {&inPointer, &outPointer, &count, &seedValue};
    device::KernelLaunch launch;
    launch.function = devices_[device]->kernels.transform;
    launch.params = params;
    const Status status = managers_.on(device)->launch(launch);
    return ok(status) ? std::string{}
                      : "launch on device " + std::to_string(device) + ": " + std::string(toString(status));
  }

  // The application reuses a buffer it copied from: a lazy copy of either
  // device must still deliver the old bytes.
  std::string touchHostBuffer() {
    if (buffers_.empty()) return {};
    auto& [data, bytes] = buffers_[pick(buffers_.size())];
    const std::size_t offset = pick(bytes);
    std::memset(data + offset, static_cast<int>(random_() & 0xFF), between(1, bytes - offset));
    return {};
  }

  std::mt19937_64 random_;
  std::vector<std::unique_ptr<Device>> devices_;
  DeviceManagers managers_;
  std::map<DevicePtr, Allocation> model_;
  std::vector<std::pair<std::uint8_t*, std::size_t>> buffers_;
  std::uint64_t crossCopies_ = 0;
};

Config twoDeviceConfig(ReplacementKind policy) {
  Config config;
  config.simGranularity = 64 * 1024;
  config.pageSize = 128 * 1024;
  config.simCapacity = 768 * 1024; // per device; about 2 MiB of live data each
  config.swapBufferLimit = 256 * 1024 * 1024;
  config.cowMinBytes = 0;
  config.simCopyBandwidthGBps = 1000;
  config.replacement = policy;
  return config;
}

class TwoDevices : public ::testing::TestWithParam<ReplacementKind> {};

TEST_P(TwoDevices, MatchUnlimitedReference) {
  const Config config = twoDeviceConfig(GetParam());
  const char* count = std::getenv("MQX_DIFFERENTIAL_SEQUENCES");
  const int sequences = count != nullptr ? std::atoi(count) : 60;
  std::uint64_t firstSeed = 70000 + 1000 * static_cast<std::uint64_t>(GetParam());
  if (const char* seed = std::getenv("MQX_DIFFERENTIAL_FIRST_SEED")) firstSeed = std::strtoull(seed, nullptr, 10);
  std::uint64_t evictions[kDevices] = {};
  std::uint64_t crossCopies = 0;
  for (int i = 0; i < sequences; ++i) {
    const std::uint64_t seed = firstSeed + static_cast<std::uint64_t>(i);
    TwoDeviceSequence sequence(config, seed);
    const std::string error = sequence.run(120);
    ASSERT_TRUE(error.empty()) << "policy " << toString(GetParam()) << ", seed " << seed << ": " << error
                               << " (rerun: MQX_DIFFERENTIAL_SEQUENCES=1 MQX_DIFFERENTIAL_FIRST_SEED=" << seed << ")";
    for (int device = 0; device < kDevices; ++device)
      evictions[device] += sequence.evictions(device);
    crossCopies += sequence.crossCopies();
  }
  // Each device was over its budget, and copies crossed: otherwise the test
  // proved nothing about two devices.
  EXPECT_GT(evictions[0], 0U);
  EXPECT_GT(evictions[1], 0U);
  EXPECT_GT(crossCopies, 0U);
}

INSTANTIATE_TEST_SUITE_P(Policies, TwoDevices,
                         ::testing::Values(ReplacementKind::Cdr, ReplacementKind::Lru, ReplacementKind::Mru,
                                           ReplacementKind::Lfu, ReplacementKind::Random, ReplacementKind::Adaptive,
                                           ReplacementKind::Reuse),
                         [](const auto& info) { return toString(info.param); });

TEST(DeviceManagersSet, OwnerFirstAndOrdinals) {
  Config config = twoDeviceConfig(ReplacementKind::Cdr);
  device::SimBackend zero(embedded::simBackendOptions(config));
  device::SimBackend one(embedded::simBackendOptions(config));
  MemoryManager first(embedded::managerOptions(config), zero);
  MemoryManager second(embedded::managerOptions(config), one);
  DeviceManagers managers;
  EXPECT_EQ(managers.first(), nullptr);
  EXPECT_EQ(managers.only(), nullptr);
  managers.add(1, &second);
  EXPECT_EQ(managers.only(), &second);
  managers.add(0, &first);
  EXPECT_EQ(managers.first(), &second) << "the first added, not the lowest ordinal, watches host memory";
  EXPECT_EQ(managers.only(), nullptr);
  EXPECT_EQ(managers.count(), 2);
  EXPECT_EQ(managers.ordinalOf(&first), 0);
  EXPECT_EQ(managers.ordinalOf(&second), 1);
  EXPECT_THROW(managers.add(1, &first), std::logic_error);
  EXPECT_THROW(managers.add(DeviceManagers::kMaxDevices, &first), std::invalid_argument);
  DevicePtr a = 0, b = 0;
  ASSERT_TRUE(ok(first.allocate(4096, &a)));
  ASSERT_TRUE(ok(second.allocate(4096, &b)));
  EXPECT_EQ(managers.owner(a + 100), &first);
  EXPECT_EQ(managers.owner(b), &second);
  EXPECT_EQ(managers.owner(0), nullptr);
}

} // namespace
} // namespace mqx::test
