// Focused behaviour of the memory manager: laziness, fills, advice,
// oversubscription and the choices eviction makes.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/swap_buffer.hpp"
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;

TEST_F(ManagerTest, HostToDeviceCopyIsLazyUntilAKernelReadsIt) {
  auto data = pattern(256 * KiB);
  DevicePtr in = allocate(data.size());
  DevicePtr out = allocate(data.size());
  ASSERT_EQ(manager_->copyHostToDevice(in, data.data(), data.size(), 0, true), Status::Success);
  EXPECT_EQ(manager_->statistics().bytesToDevice, 0U);
  EXPECT_EQ(backend_->transferTotals().bytesToDevice, 0U); // nothing moved yet
  EXPECT_EQ(manager_->advise(in, Access::Input), Status::Success);
  EXPECT_EQ(manager_->advise(out, Access::Output), Status::Success);
  ASSERT_EQ(transform(in, out, data.size(), 5), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  EXPECT_EQ(manager_->statistics().bytesToDevice,
            data.size()); // the input, once; the output was not loaded
  auto expected = data;
  transformReference(data.data(), expected.data(), data.size(), 5);
  EXPECT_EQ(read(out, data.size()), expected);
  EXPECT_EQ(read(in, data.size()), data);
}

TEST_F(ManagerTest, OverwrittenLazyDataIsNeverTransferred) {
  auto first = pattern(128 * KiB, 1);
  auto second = pattern(128 * KiB, 9);
  DevicePtr region = allocate(first.size());
  ASSERT_EQ(manager_->copyHostToDevice(region, first.data(), first.size(), 0, true), Status::Success);
  ASSERT_EQ(manager_->copyHostToDevice(region, second.data(), second.size(), 0, true), Status::Success);
  EXPECT_EQ(manager_->statistics().bytesAvoidedLazy, first.size());
  EXPECT_EQ(read(region, second.size()), second);
  EXPECT_EQ(manager_->statistics().bytesToDevice, 0U);
}

TEST_F(ManagerTest, MemsetIsAFillStateNotATransfer) {
  DevicePtr region = allocate(200 * KiB + 6);
  ASSERT_EQ(manager_->memset(region, 0xABCD1234, 4, (200 * KiB + 4) / 4, 0, true), Status::Success);
  auto bytes = read(region, 200 * KiB + 6);
  for (std::size_t i = 0; i + 4 <= 200 * KiB + 4; i += 4) {
    std::uint32_t value;
    std::memcpy(&value, bytes.data() + i, 4);
    ASSERT_EQ(value, 0xABCD1234U) << i;
  }
  EXPECT_EQ(bytes[200 * KiB + 4], 0); // past the memset: never written, zero
  DevicePtr out = allocate(200 * KiB + 6);
  ASSERT_EQ(transform(region, out, 200 * KiB + 6, 0), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  auto stats = manager_->statistics();
  // Whole pages were filled on the device; only the last page, which the
  // memset covers partly, came from the swap buffer (8 KiB + 6 bytes).
  EXPECT_EQ(stats.bytesToDevice, 8 * KiB + 6);
  EXPECT_GT(stats.bytesFilledOnDevice, 0U);
}

TEST_F(ManagerTest, OversubscribedKernelsGetCorrectResults) {
  // Six regions of 384 KiB each on a 1 MiB device.
  std::vector<DevicePtr> regions;
  std::vector<std::vector<std::uint8_t>> expected;
  for (int i = 0; i < 6; ++i) {
    regions.push_back(allocate(384 * KiB));
    expected.push_back(pattern(384 * KiB, static_cast<std::uint8_t>(i)));
    ASSERT_EQ(manager_->copyHostToDevice(regions.back(), expected.back().data(), 384 * KiB, 0, true), Status::Success);
  }
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 6; ++i) {
      ASSERT_EQ(transform(regions[i], regions[i], 384 * KiB, static_cast<std::uint8_t>(round)), Status::Success);
      transformReference(expected[i].data(), expected[i].data(), 384 * KiB, static_cast<std::uint8_t>(round));
      EXPECT_LE(manager_->residentBytes(), 1024 * KiB);
    }
  }
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(read(regions[i], 384 * KiB), expected[i]) << i;
  auto stats = manager_->statistics();
  EXPECT_GT(stats.evictions, 0U);
  EXPECT_GT(stats.bytesWrittenBack, 0U);
}

TEST(SwapBufferLimit, ZeroIsHalfTheHostsPhysicalMemory) {
  const auto physical = static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  EXPECT_EQ(SwapBuffer::limitFor(0), physical / 2);
  EXPECT_EQ(SwapBuffer::limitFor(64 * KiB), 64 * KiB);
  EXPECT_EQ(Config{}.swapBufferLimit, 0U) << "the default is the host-sized limit";
}

TEST_F(ManagerTest, DefaultSwapLimitHoldsTwiceTheDeviceAndMore) {
  // bench/peers at 2x the device failed with out-of-memory under a fixed
  // 16 GiB swap; the default now scales with the host. Here: 4x a 1 MiB
  // device, every byte back intact.
  Config config = smallConfig();
  config.swapBufferLimit = 0;
  start(config);
  std::vector<DevicePtr> regions;
  std::vector<std::vector<std::uint8_t>> expected;
  for (int i = 0; i < 8; ++i) {
    regions.push_back(allocate(512 * KiB));
    expected.push_back(pattern(512 * KiB, static_cast<std::uint8_t>(i + 3)));
    ASSERT_EQ(manager_->copyHostToDevice(regions.back(), expected.back().data(), 512 * KiB, 0, true), Status::Success);
    ASSERT_EQ(transform(regions.back(), regions.back(), 512 * KiB, 9), Status::Success);
    transformReference(expected.back().data(), expected.back().data(), 512 * KiB, 9);
  }
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(read(regions[i], 512 * KiB), expected[i]) << i;
  EXPECT_GT(manager_->statistics().evictions, 0U);
}

TEST_F(ManagerTest, CdrEvictsCleanDataFirst) {
  // a: clean (input only), b: dirty (kernel output). Make room for c.
  DevicePtr a = allocate(384 * KiB);
  DevicePtr b = allocate(384 * KiB);
  DevicePtr c = allocate(384 * KiB);
  auto data = pattern(384 * KiB);
  EXPECT_EQ(manager_->copyHostToDevice(a, data.data(), data.size(), 0, true), Status::Success);
  EXPECT_EQ(manager_->advise(a, Access::Input), Status::Success);
  EXPECT_EQ(manager_->advise(b, Access::Output), Status::Success);
  ASSERT_EQ(transform(a, b, data.size(), 1),
            Status::Success); // b is newer and dirty
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  EXPECT_EQ(manager_->advise(c, Access::Output), Status::Success);
  EXPECT_EQ(manager_->advise(c, Access::Input), Status::Success);
  ASSERT_EQ(transform(c, c, data.size(), 1), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  auto stats = manager_->statistics();
  EXPECT_EQ(stats.evictions, 1U);
  EXPECT_EQ(stats.bytesWrittenBack,
            0U); // a went, clean; LRU would have picked a too, so check b stays
  EXPECT_EQ(stats.bytesDroppedClean, 384 * KiB);
}

TEST_F(ManagerTest, CdrDiffersFromLruWhenTheColdRegionIsDirty) {
  for (auto kind : {ReplacementKind::Cdr, ReplacementKind::Lru}) {
    TearDown();
    Config config = smallConfig();
    config.replacement = kind;
    start(config);
    DevicePtr a = allocate(384 * KiB);
    DevicePtr b = allocate(384 * KiB);
    DevicePtr c = allocate(384 * KiB);
    auto data = pattern(384 * KiB);
    EXPECT_EQ(manager_->copyHostToDevice(b, data.data(), data.size(), 0, true), Status::Success);
    EXPECT_EQ(manager_->advise(a, Access::Output), Status::Success);
    EXPECT_EQ(manager_->advise(b, Access::Input), Status::Success); // note: b's transform writes a; b stays clean
    ASSERT_EQ(transform(b, a, data.size(), 1), Status::Success);
    EXPECT_EQ(manager_->advise(b, Access::Input), Status::Success);
    EXPECT_EQ(manager_->advise(b, Access::Input), Status::Success);
    ASSERT_EQ(transform(b, b, 0, 0),
              Status::Success); // a second use: b is now the most recent
    EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
    EXPECT_EQ(manager_->advise(c, Access::Output), Status::Success);
    ASSERT_EQ(transform(c, c, 0, 0), Status::Success);
    EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
    auto stats = manager_->statistics();
    EXPECT_EQ(stats.evictions, 1U) << toString(kind);
    if (kind == ReplacementKind::Cdr)
      EXPECT_EQ(stats.bytesWrittenBack, 0U) << "CDR keeps the dirty, colder region a";
    else
      EXPECT_EQ(stats.bytesWrittenBack, 384 * KiB) << "LRU evicts the colder, dirty region a";
  }
}

// The paper's NoRef (§7.3): without reference detection every region
// resident at a launch counts as read and written by it. A clean region the
// kernel does not touch is then dirty afterwards and is written back when
// evicted; with detection it is dropped.
TEST_F(ManagerTest, NoRefMakesEveryResidentRegionDirty) {
  for (auto detection : {ReferenceDetection::Auto, ReferenceDetection::All}) {
    TearDown();
    Config config = smallConfig();
    config.referenceDetection = detection;
    start(config);
    const bool noRef = detection == ReferenceDetection::All;
    DevicePtr input = allocate(256 * KiB);
    DevicePtr output = allocate(256 * KiB);
    auto data = pattern(256 * KiB);
    EXPECT_EQ(manager_->copyHostToDevice(input, data.data(), data.size(), 0, true), Status::Success);
    EXPECT_EQ(manager_->advise(input, Access::Input), Status::Success);
    EXPECT_EQ(manager_->advise(output, Access::Output), Status::Success);
    ASSERT_EQ(transform(input, output, data.size(), 1), Status::Success); // input resident and clean
    EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
    EXPECT_EQ(manager_->advise(output, Access::Both), Status::Success);
    ASSERT_EQ(transform(output, output, data.size(), 2), Status::Success); // names only output
    EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
    const auto before = manager_->statistics();
    EXPECT_GT(manager_->evictForOtherProcess(std::size_t{1} << 30, std::chrono::milliseconds(100), 0), 0U);
    const auto stats = manager_->statistics();
    const std::uint64_t writtenBack = stats.bytesWrittenBack - before.bytesWrittenBack;
    EXPECT_EQ(writtenBack, noRef ? 512 * KiB : 256 * KiB) << (noRef ? "NoRef" : "Auto") << ": " << stats.toJson();
    EXPECT_EQ(stats.bytesDroppedClean - before.bytesDroppedClean, noRef ? 0U : 256 * KiB);
    std::vector<std::uint8_t> expected(data.size());
    transformReference(data.data(), expected.data(), data.size(), 1);
    transformReference(expected.data(), expected.data(), data.size(), 2);
    EXPECT_EQ(read(input, data.size()), data);
    EXPECT_EQ(read(output, data.size()), expected);
  }
}

TEST_F(ManagerTest, ParameterScanFindsInteriorAndStructPointers) {
  Config config = smallConfig();
  config.referenceDetection = ReferenceDetection::Scan;
  TearDown();
  start(config);
  auto data = pattern(300 * KiB);
  DevicePtr source = allocate(data.size());
  DevicePtr target = allocate(data.size());
  EXPECT_EQ(manager_->copyHostToDevice(source, data.data(), data.size(), 0, true), Status::Success);
  EXPECT_EQ(manager_->memset(target, 0x11, 1, data.size(), 0, true), Status::Success);
  XorArguments arguments{reinterpret_cast<std::uint8_t*>(source + 1000), reinterpret_cast<std::uint8_t*>(target + 1000),
                         data.size() - 1000};
  void* params[] = {&arguments};
  device::KernelLaunch launch;
  launch.function = kernels_->xorStruct;
  launch.params = params;
  ASSERT_EQ(manager_->launch(launch), Status::Success);
  auto result = read(target, data.size());
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_EQ(result[i], i < 1000 ? 0x11 : (0x11 ^ data[i])) << i;
}

TEST_F(ManagerTest, PageGranularEvictionEvictsOnlyWhatIsNeeded) {
  Config config = smallConfig();
  config.evictionGranularity = EvictionGranularity::Page;
  config.sparePages = 0; // exactly what is needed: the spare page's one more is spare_page_test.cpp's
  TearDown();
  start(config);
  DevicePtr big = allocate(768 * KiB);
  DevicePtr small = allocate(384 * KiB);
  EXPECT_EQ(manager_->memset(big, 1, 1, 768 * KiB, 0, true), Status::Success);
  ASSERT_EQ(transform(big, big, 768 * KiB, 1), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  ASSERT_EQ(transform(small, small, 384 * KiB, 1), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  // 1 MiB device: 128 KiB of big's pages must go, not all 768 KiB.
  auto stats = manager_->statistics();
  EXPECT_EQ(stats.pagesEvicted, 2U);
  EXPECT_EQ(stats.bytesWrittenBack, 128 * KiB);
}

TEST_F(ManagerTest, TryUsageIsTheStatisticsAndTheSwapBufferUse) {
  // Oversubscribed (2.25 MiB on a 1 MiB device), so dirty data lives in the
  // swap buffer.
  std::vector<DevicePtr> regions;
  for (int i = 0; i < 6; ++i) {
    regions.push_back(allocate(384 * KiB));
    auto data = pattern(384 * KiB, static_cast<std::uint8_t>(i));
    ASSERT_EQ(manager_->copyHostToDevice(regions.back(), data.data(), data.size(), 0, true), Status::Success);
    ASSERT_EQ(transform(regions.back(), regions.back(), 384 * KiB, 3), Status::Success);
  }
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  const auto usage = manager_->tryUsage();
  ASSERT_TRUE(usage.has_value()) << "nobody holds the manager's lock";
  EXPECT_EQ(usage->statistics.toJson(), manager_->statistics().toJson());
  EXPECT_EQ(usage->statistics.launches, 6U);
  // What the device cannot hold (at least 1.25 MiB of dirty data) is in the swap buffer.
  EXPECT_GE(usage->swapUsedBytes, 6 * 384 * KiB - 1024 * KiB);
  EXPECT_GE(usage->swapReservedBytes, usage->swapUsedBytes);
}

// A kernel that runs until released; synchronizeAll() waits for it holding
// the manager's lock. While it does, tryUsage() answers without waiting (the
// node's eviction-serving thread calls it, and the manager may hold its lock
// while it waits for that thread): the counters as the manager last left a
// call after a reader asked, so that a process that holds its lock most of
// the time still publishes on time (UsageSnapshot).
TEST_F(ManagerTest, TryUsageWhileTheLockIsHeldAnswersTheCountersOfTheLastCallAskedFor) {
  std::atomic<bool> release{false};
  const FunctionHandle blocking = backend_->registerKernel(
      [&release](const device::SimKernelContext&, void**) {
        while (!release.load())
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      {});
  // Launches the kernel (the n-th launch) and holds the lock in
  // synchronizeAll() until `answered` says whether tryUsage() gave, while
  // the lock was held, what a call of the manager could not: fewer than n
  // launches (a lock-free answer). Returns the launches of that answer, -1
  // for no usage, or -2 when no answer came without the lock in 10 s.
  const auto usageWhileHeld = [&](std::uint64_t launches) -> long {
    release = false;
    device::KernelLaunch launch;
    launch.function = blocking;
    EXPECT_EQ(manager_->launch(launch), Status::Success);
    std::thread waiter([&] { EXPECT_EQ(manager_->synchronizeAll(), Status::Success); });
    long seen = -2;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen == -2 && std::chrono::steady_clock::now() < deadline) {
      const auto usage = manager_->tryUsage();
      if (!usage)
        seen = -1;
      else if (usage->statistics.launches < launches)
        seen = static_cast<long>(usage->statistics.launches);
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // the lock was free: ask again
    }
    release = true;
    waiter.join();
    return seen;
  };
  EXPECT_EQ(usageWhileHeld(1), -1) << "nothing stored before a reader asked";
  // That answer asked; synchronizeAll() stored its counts as it left.
  EXPECT_EQ(usageWhileHeld(2), 1);
  EXPECT_EQ(usageWhileHeld(3), 2) << "the counts of the call that left after the last request";
  const auto usage = manager_->tryUsage();
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->statistics.launches, 3U);
}

TEST_F(ManagerTest, MemoryInfoReportsTheManagedBudget) {
  std::size_t freeBytes = 0, totalBytes = 0;
  manager_->memoryInfo(&freeBytes, &totalBytes);
  EXPECT_EQ(totalBytes, 1024 * KiB);
  EXPECT_EQ(freeBytes, 1024 * KiB);
  DevicePtr region = allocate(256 * KiB);
  ASSERT_EQ(transform(region, region, 256 * KiB, 0), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  manager_->memoryInfo(&freeBytes, &totalBytes);
  EXPECT_EQ(freeBytes, 768 * KiB);
}

TEST_F(ManagerTest, StreamsKeepTheirOrder) {
  StreamHandle stream = backend_->createStream();
  auto data = pattern(512 * KiB);
  DevicePtr region = allocate(data.size());
  EXPECT_EQ(manager_->copyHostToDevice(region, data.data(), data.size(), stream, false), Status::Success);
  auto expected = data;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(transform(region, region, data.size(), static_cast<std::uint8_t>(i), stream), Status::Success);
    transformReference(expected.data(), expected.data(), data.size(), static_cast<std::uint8_t>(i));
  }
  std::vector<std::uint8_t> out(data.size());
  ASSERT_EQ(manager_->copyDeviceToHost(out.data(), region, out.size(), stream, false), Status::Success);
  EXPECT_EQ(out, expected);
}

TEST_F(ManagerTest, AKernelOnAnotherStreamWaitsForTheLoadAnEarlierLaunchIssued) {
  // A launch on stream A loads an evicted region on the transfer stream and
  // orders A after it. A launch on stream B that reads the same region right
  // after finds its pages backed and valid: it must be ordered after that
  // load too, or it reads the page before its bytes arrive (the load takes
  // 26 ms here: copies at 10 MB/s in real time).
  Config config = smallConfig();
  config.simRealtime = true;
  config.simCopyBandwidthGBps = 0.01;
  config.pointersInParameters = true;
  // The scenario (which region goes, which stays resident) is arranged for
  // a recency order: the reuse policy would evict outSecond instead.
  config.replacement = ReplacementKind::Cdr;
  start(config);
  constexpr std::size_t bytes = 256 * KiB;
  const auto data = pattern(bytes, 3);
  const DevicePtr source = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(source, data.data(), bytes, 0, true), Status::Success);
  ASSERT_EQ(transform(source, source, bytes, 1), Status::Success); // on the device, dirty
  auto expected = data;
  transformReference(expected.data(), expected.data(), bytes, 1);
  for (std::uint8_t seed = 10; seed < 14; ++seed) { // four more fill the 1 MiB device: the source goes
    const DevicePtr other = allocate(bytes);
    ASSERT_EQ(transform(other, other, bytes, seed), Status::Success);
  }
  const StreamHandle first = backend_->createStream();
  const StreamHandle second = backend_->createStream();
  // The second launch's output already resident: every page it uses is
  // then backed and valid when it comes (the launch path's fast case).
  const DevicePtr outSecond = allocate(bytes);
  ASSERT_EQ(transform(outSecond, outSecond, bytes, 20, second), Status::Success);
  ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  ASSERT_GT(manager_->statistics().evictions, 0U);
  const DevicePtr outFirst = allocate(bytes);
  ASSERT_EQ(transform(source, outFirst, bytes, 5, first), Status::Success);
  const std::uint64_t loadsBefore = manager_->statistics().bytesToDevice;
  ASSERT_EQ(transform(source, outSecond, bytes, 5, second), Status::Success);
  ASSERT_EQ(manager_->statistics().bytesToDevice, loadsBefore); // nothing of its own to load
  ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  auto want = expected;
  transformReference(expected.data(), want.data(), bytes, 5);
  EXPECT_EQ(read(outFirst, bytes), want);
  EXPECT_EQ(read(outSecond, bytes), want);
}

TEST_F(ManagerTest, ACopyFromAPageAKernelWritesOnItsHostBlockTakesWhatTheKernelWrote) {
  // A kernel on stream A over a region of 17 pages, one more than the
  // device has, writes the last page through its host block (the others
  // first: pages are backed in order). It runs once its pages' loads are
  // done (105 ms at 10 MB/s). A device-to-device copy of the region on
  // stream B, which the application ordered after A on the device (an
  // event), must copy what the kernel wrote: taking that page's block on
  // the host at once (a lazy copy of its image) copied it before the kernel
  // ran.
  Config config = smallConfig(); // 64 KiB pages, a 1 MiB device
  config.simRealtime = true;
  config.simCopyBandwidthGBps = 0.01;
  config.pointersInParameters = true;
  start(config);
  constexpr std::size_t bytes = 17 * 64 * KiB;
  const auto data = pattern(bytes, 9);
  const DevicePtr region = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(region, data.data(), bytes, 0, true), Status::Success);
  const StreamHandle writer = backend_->createStream();
  const StreamHandle reader = backend_->createStream();
  ASSERT_EQ(transform(region, region, bytes, 4, writer), Status::Success);
  ASSERT_EQ(backend_->order(writer, reader), Status::Success);
  const DevicePtr copy = allocate(bytes);
  ASSERT_EQ(manager_->copyDeviceToDevice(copy, region, bytes, reader, false), Status::Success);
  ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  auto want = data;
  transformReference(data.data(), want.data(), bytes, 4);
  EXPECT_EQ(read(region, bytes), want);
  EXPECT_EQ(read(copy, bytes), want);
}

} // namespace
} // namespace mqx::test
