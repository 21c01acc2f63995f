// The simulated device must behave like the GPU where the core depends on
// it: capacity enforced on map, stable reserved ranges, stream order,
// cross-stream ordering and fences.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <time.h>

#include "device/sim/sim_backend.hpp"

namespace mqx::device {
namespace {

SimBackendOptions smallDevice() {
  SimBackendOptions options;
  options.capacity = 4 << 20;
  options.granularity = 1 << 20;
  return options;
}

TEST(SimBackend, EnforcesCapacityLikeTheGpu) {
  SimBackend backend(smallDevice());
  DevicePtr base = 0;
  ASSERT_EQ(backend.reserve(8 << 20, &base), Status::Success);
  EXPECT_EQ(base % (1 << 20), 0U);
  EXPECT_EQ(backend.map(base, 4 << 20), Status::Success);
  EXPECT_EQ(backend.map(base + (4 << 20), 1 << 20), Status::OutOfMemory);
  EXPECT_EQ(backend.freeMemory(), 0U);
  EXPECT_EQ(backend.unmap(base, 4 << 20), Status::Success);
  EXPECT_EQ(backend.map(base + (4 << 20), 1 << 20), Status::Success);
  EXPECT_EQ(backend.unmap(base + (4 << 20), 1 << 20), Status::Success);
  EXPECT_EQ(backend.release(base, 8 << 20), Status::Success);
}

TEST(SimBackend, RejectsMisalignedOrForeignRanges) {
  SimBackend backend(smallDevice());
  DevicePtr base = 0;
  ASSERT_EQ(backend.reserve(2 << 20, &base), Status::Success);
  EXPECT_EQ(backend.reserve(1000, &base), Status::InvalidValue);
  EXPECT_EQ(backend.map(base + 4096, 1 << 20), Status::InvalidValue);
  EXPECT_EQ(backend.map(base, 3 << 20),
            Status::InvalidValue); // past the reservation
  EXPECT_EQ(backend.map(0x1000000, 1 << 20), Status::InvalidValue);
  ASSERT_EQ(backend.map(base, 1 << 20), Status::Success);
  EXPECT_EQ(backend.map(base, 1 << 20), Status::InvalidValue); // already mapped
  EXPECT_EQ(backend.release(base, 2 << 20),
            Status::InvalidValue); // still mapped
  EXPECT_EQ(backend.unmap(base, 1 << 20), Status::Success);
  EXPECT_EQ(backend.release(base, 2 << 20), Status::Success);
}

TEST(SimBackend, FreshMappingsHoldGarbageNotZeros) {
  SimBackend backend(smallDevice());
  DevicePtr base = 0;
  ASSERT_EQ(backend.reserve(1 << 20, &base), Status::Success);
  ASSERT_EQ(backend.map(base, 1 << 20), Status::Success);
  std::vector<std::uint8_t> host(16, 0);
  ASSERT_EQ(backend.copyToHost(host.data(), base, host.size(), 0, false), Status::Success);
  ASSERT_EQ(backend.synchronize(0), Status::Success);
  EXPECT_NE(host[0], 0);
  EXPECT_EQ(backend.copyToHost(host.data(), base + (1 << 20) - 8, 16, 0, false), Status::InvalidValue);
  EXPECT_EQ(backend.unmap(base, 1 << 20), Status::Success);
  EXPECT_EQ(backend.release(base, 1 << 20), Status::Success);
}

TEST(SimBackend, StreamsRunInOrderAndOrderAcrossStreams) {
  SimBackend backend(smallDevice());
  std::atomic<int> step{0};
  std::vector<int> seen;
  std::mutex seenMutex;
  auto record = [&](int value) {
    std::lock_guard lock(seenMutex);
    seen.push_back(value);
  };
  FunctionHandle slow = backend.registerKernel(
      [&](const SimKernelContext&, void**) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        record(1);
      },
      {});
  FunctionHandle fast = backend.registerKernel([&](const SimKernelContext&, void**) { record(2); }, {});
  StreamHandle a = backend.createStream();
  StreamHandle b = backend.createStream();
  KernelLaunch first;
  first.function = slow;
  first.stream = a;
  ASSERT_EQ(backend.launch(first), Status::Success);
  ASSERT_EQ(backend.order(a, b), Status::Success);
  KernelLaunch second;
  second.function = fast;
  second.stream = b;
  ASSERT_EQ(backend.launch(second), Status::Success);
  Fence fence;
  ASSERT_EQ(backend.enqueueFence(b, &fence), Status::Success);
  ASSERT_EQ(backend.waitFence(fence), Status::Success);
  EXPECT_TRUE(backend.fenceReached(fence));
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0], 1); // b waited for a
  EXPECT_EQ(seen[1], 2);
  (void)step;
  EXPECT_EQ(backend.destroyStream(a), Status::Success);
  EXPECT_EQ(backend.destroyStream(a), Status::InvalidHandle);
  KernelLaunch stale;
  stale.function = fast;
  stale.stream = a;
  EXPECT_EQ(backend.launch(stale), Status::InvalidHandle);
}

TEST(SimBackend, KernelParametersAreCopiedAtLaunch) {
  SimBackend backend(smallDevice());
  std::atomic<std::uint64_t> seenValue{0};
  FunctionHandle kernel = backend.registerKernel(
      [&](const SimKernelContext&, void** params) { seenValue = *static_cast<std::uint64_t*>(params[0]); }, {{0, 8}});
  std::uint64_t value = 7;
  void* params[] = {&value};
  KernelLaunch launch;
  launch.function = kernel;
  launch.params = params;
  FunctionHandle blocker = backend.registerKernel(
      [](const SimKernelContext&, void**) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, {});
  KernelLaunch wait;
  wait.function = blocker;
  ASSERT_EQ(backend.launch(wait), Status::Success);
  ASSERT_EQ(backend.launch(launch), Status::Success);
  value = 99; // the launch must not see this
  EXPECT_EQ(backend.synchronize(0), Status::Success);
  EXPECT_EQ(seenValue.load(), 7U);
}

TEST(SimBackend, ChargesTransfersAtTheConfiguredBandwidth) {
  SimBackendOptions options = smallDevice();
  options.copyBandwidthGBps = 1.0;
  SimBackend backend(options);
  DevicePtr base = 0;
  ASSERT_EQ(backend.reserve(1 << 20, &base), Status::Success);
  ASSERT_EQ(backend.map(base, 1 << 20), Status::Success);
  std::vector<std::uint8_t> host(1 << 20, 1);
  EXPECT_EQ(backend.copyToDevice(base, host.data(), host.size(), 0, true), Status::Success);
  EXPECT_EQ(backend.copyToHost(host.data(), base, host.size(), 0, true), Status::Success);
  EXPECT_EQ(backend.synchronize(0), Status::Success);
  auto totals = backend.transferTotals();
  EXPECT_EQ(totals.bytesToDevice, 1U << 20);
  EXPECT_EQ(totals.bytesToHost, 1U << 20);
  EXPECT_NEAR(totals.secondsToDevice, (1 << 20) / 1e9, 1e-9);
  EXPECT_EQ(backend.unmap(base, 1 << 20), Status::Success);
  EXPECT_EQ(backend.release(base, 1 << 20), Status::Success);
}

// In real time a transfer sleeps its charged time; a fence wait behind it
// must sleep too, not spin: several query processes of a simulated node
// would otherwise keep the host's cores busy while their devices "work".
TEST(SimBackend, ARealTimeFenceWaitSleepsInsteadOfSpinning) {
  SimBackendOptions options = smallDevice();
  options.copyBandwidthGBps = 0.005; // 1 MiB: about 210 ms
  options.realtime = true;
  SimBackend backend(options);
  DevicePtr base = 0;
  ASSERT_EQ(backend.reserve(1 << 20, &base), Status::Success);
  ASSERT_EQ(backend.map(base, 1 << 20), Status::Success);
  std::vector<std::uint8_t> host(1 << 20, 1);
  const auto wallStart = std::chrono::steady_clock::now();
  ASSERT_EQ(backend.copyToDevice(base, host.data(), host.size(), 0, true), Status::Success);
  Fence fence;
  ASSERT_EQ(backend.enqueueFence(0, &fence), Status::Success);
  timespec cpuStart{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpuStart);
  ASSERT_EQ(backend.waitFence(fence), Status::Success);
  timespec cpuEnd{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpuEnd);
  const double waitedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
  const double cpuSeconds = double(cpuEnd.tv_sec - cpuStart.tv_sec) + double(cpuEnd.tv_nsec - cpuStart.tv_nsec) / 1e9;
  EXPECT_GE(waitedSeconds, 0.2);
  // A yielding loop spends most of the wait on the CPU (in sched_yield).
  EXPECT_LT(cpuSeconds, 0.02) << "waited " << waitedSeconds << " s";
  backend.unmap(base, 1 << 20);
  backend.release(base, 1 << 20);
}

} // namespace
} // namespace mqx::device
