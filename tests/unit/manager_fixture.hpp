// A memory manager on a small simulated device, for focused tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "core/device_budget.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "sim_kernels.hpp"

namespace mqx::test {

inline Config smallConfig() {
  Config config;
  config.simGranularity = 64 * 1024;
  config.pageSize = 64 * 1024;
  config.simCapacity = 1024 * 1024;
  config.swapBufferLimit = 64 * 1024 * 1024;
  config.cowMinBytes = 0;
  return config;
}

class ManagerTest : public ::testing::Test {
protected:
  // `budget`: the device budget, when not the manager's own (a node's).
  void start(const Config& config = smallConfig(), std::shared_ptr<DeviceBudget> budget = nullptr) {
    // A restart with another configuration: the old manager goes before the
    // backend it holds (its swap buffer returns its blocks to it).
    hook::registerHostMemoryManager(nullptr);
    manager_.reset();
    kernels_.reset();
    config_ = config;
    backend_ = std::make_unique<device::SimBackend>(embedded::simBackendOptions(config_));
    kernels_ = std::make_unique<SimKernels>(*backend_);
    manager_ = std::make_unique<MemoryManager>(embedded::managerOptions(config_), *backend_, std::move(budget));
    hook::registerHostMemoryManager(manager_.get());
  }
  void SetUp() override { start(); }
  void TearDown() override {
    // No longer watched before the manager goes: its own frees reached the
    // manager half destroyed through the free() hook. Unregistering also
    // waits for hook calls on other threads (the sim streams' workers) that
    // read the manager before: one preempted there made
    // BadInputTest.AllocationLargerThan... hang 300 s in ctest
    // (docs/interposer.md, the host-memory hooks).
    hook::registerHostMemoryManager(nullptr);
    manager_.reset();
  }

  DevicePtr allocate(std::size_t bytes) {
    DevicePtr address = 0;
    EXPECT_EQ(manager_->allocate(bytes, &address), Status::Success);
    return address;
  }
  std::vector<std::uint8_t> read(DevicePtr address, std::size_t bytes) {
    std::vector<std::uint8_t> out(bytes);
    EXPECT_EQ(manager_->copyDeviceToHost(out.data(), address, bytes, 0, true), Status::Success);
    return out;
  }
  Status transform(DevicePtr in, DevicePtr out, std::uint64_t n, std::uint8_t seed, StreamHandle stream = 0) {
    void* inPointer = reinterpret_cast<void*>(in);
    void* outPointer = reinterpret_cast<void*>(out);
    void* params[] = {&inPointer, &outPointer, &n, &seed};
    device::KernelLaunch launch;
    launch.function = kernels_->transform;
    launch.params = params;
    launch.stream = stream;
    return manager_->launch(launch);
  }
  static std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint8_t start = 1) {
    std::vector<std::uint8_t> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i)
      data[i] = static_cast<std::uint8_t>(start + i * 7 + i / 251);
    return data;
  }

  Config config_;
  std::unique_ptr<device::SimBackend> backend_;
  std::unique_ptr<SimKernels> kernels_;
  std::unique_ptr<MemoryManager> manager_;
};

} // namespace mqx::test
