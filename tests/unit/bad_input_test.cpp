// Bad input gets a clear error code and disturbs nothing else.
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;

class BadInputTest : public ManagerTest {
protected:
  void SetUp() override {
    ManagerTest::SetUp();
    data_ = pattern(200 * KiB);
    region_ = allocate(data_.size());
    ASSERT_EQ(manager_->copyHostToDevice(region_, data_.data(), data_.size(), 0, true), Status::Success);
    ASSERT_EQ(transform(region_, region_, data_.size(), 3), Status::Success);
    transformReference(data_.data(), data_.data(), data_.size(), 3);
  }
  // The existing region is intact after every bad call.
  void expectIntact() { EXPECT_EQ(read(region_, data_.size()), data_); }
  // Up to `count` regions of `bytes`, as many as the manager gives.
  std::vector<DevicePtr> allocateUpTo(int count, std::size_t bytes) {
    std::vector<DevicePtr> regions;
    for (int i = 0; i < count; ++i) {
      DevicePtr region = 0;
      if (!ok(manager_->allocate(bytes, &region))) break;
      regions.push_back(region);
    }
    return regions;
  }

  std::vector<std::uint8_t> data_;
  DevicePtr region_ = 0;
};

TEST_F(BadInputTest, FreeOfUnknownInteriorOrFreedAddresses) {
  EXPECT_EQ(manager_->free(0), Status::InvalidValue);
  EXPECT_EQ(manager_->free(0xdead0000), Status::InvalidValue);
  EXPECT_EQ(manager_->free(region_ + 16), Status::InvalidValue);
  DevicePtr other = allocate(4096);
  EXPECT_EQ(manager_->free(other), Status::Success);
  EXPECT_EQ(manager_->free(other), Status::InvalidValue);
  expectIntact();
}

TEST_F(BadInputTest, CopiesOutOfRangeOrOnUnmanagedMemory) {
  std::vector<std::uint8_t> host(300 * KiB);
  EXPECT_EQ(manager_->copyHostToDevice(region_ + 100, host.data(), data_.size(), 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyHostToDevice(region_, nullptr, 16, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyHostToDevice(0x1234, host.data(), 16, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyDeviceToHost(host.data(), region_, data_.size() + 1, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyDeviceToHost(nullptr, region_, 16, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyDeviceToDevice(0x1000, 0x2000, 16, 0, true), Status::InvalidValue);
  DevicePtr small = allocate(4096);
  EXPECT_EQ(manager_->copyDeviceToDevice(small, region_, 8192, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->copyHostToDevice(region_, host.data(), 0, 0, true),
            Status::Success); // zero bytes: no-op
  EXPECT_EQ(manager_->copyHostToDevice(region_, data_.data(), 16, 12345, true), Status::InvalidHandle);
  expectIntact();
}

TEST_F(BadInputTest, MemsetWithBadElementSizeOrAlignment) {
  EXPECT_EQ(manager_->memset(region_, 1, 3, 10, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->memset(region_ + 1, 1, 4, 10, 0, true), Status::InvalidValue);
  EXPECT_EQ(manager_->memset(region_, 1, 4, data_.size(), 0, true),
            Status::InvalidValue); // past the end
  EXPECT_EQ(manager_->memset(region_, 1, 1, std::size_t{1} << 62, 0, true), Status::InvalidValue);
  expectIntact();
}

TEST_F(BadInputTest, AdviceOnUnmanagedMemoryOrWithBadFlags) {
  int onStack = 0;
  EXPECT_EQ(manager_->advise(reinterpret_cast<DevicePtr>(&onStack), Access::Input), Status::InvalidValue);
  EXPECT_EQ(manager_->advise(region_, Access::None), Status::InvalidValue);
  EXPECT_EQ(manager_->advise(region_, static_cast<Access>(7)), Status::InvalidValue);
  expectIntact();
}

TEST_F(BadInputTest, ZeroHugeAndTooLargeAllocations) {
  DevicePtr address = 77;
  EXPECT_EQ(manager_->allocate(0, &address), Status::InvalidValue);
  EXPECT_EQ(manager_->allocate(std::size_t{1} << 62, &address), Status::OutOfMemory);
  // Larger than the device: pages that get no device memory map host
  // memory, so a kernel can still use it all (docs/architecture.md).
  ASSERT_EQ(manager_->allocate(2048 * KiB, &address), Status::Success);
  std::vector<std::uint8_t> zeros(2048 * KiB, 0), expected(2048 * KiB);
  transformReference(zeros.data(), expected.data(), expected.size(), 4);
  ASSERT_EQ(transform(address, address, 2048 * KiB, 4), Status::Success);
  EXPECT_EQ(read(address, 2048 * KiB), expected);
  EXPECT_EQ(manager_->free(address), Status::Success);
  EXPECT_EQ(manager_->allocate(16, nullptr), Status::InvalidValue);
  // Fill device + swap (1 MiB + 64 MiB), then one more is refused cleanly.
  std::vector<DevicePtr> filler;
  for (int i = 0; i < 64; ++i) {
    DevicePtr region = 0;
    if (!ok(manager_->allocate(1024 * KiB, &region))) break;
    filler.push_back(region);
  }
  EXPECT_EQ(manager_->allocate(1024 * KiB, &address), Status::OutOfMemory);
  for (DevicePtr region : filler)
    EXPECT_EQ(manager_->free(region), Status::Success);
  expectIntact();
}

TEST_F(BadInputTest, AllocationLargerThanTheDeviceWithoutHostMappingIsRefused) {
  TearDown();
  Config config = smallConfig();
  config.pinnedSwap = false; // no host blocks: a page that is not resident is unmapped
  start(config);
  DevicePtr address = 77;
  EXPECT_EQ(manager_->allocate(2048 * KiB, &address), Status::OutOfMemory);
}

TEST_F(BadInputTest, KernelReferencingMoreThanTheDeviceRunsFromHostMemory) {
  // 1.5 MiB in one launch on a 1 MiB device: what does not fit runs from
  // its host blocks, the result exact.
  DevicePtr a = allocate(768 * KiB);
  DevicePtr b = allocate(768 * KiB);
  auto data = pattern(768 * KiB, 3);
  ASSERT_EQ(manager_->copyHostToDevice(a, data.data(), data.size(), 0, true), Status::Success);
  ASSERT_EQ(transform(a, b, data.size(), 7), Status::Success);
  auto expected = data;
  transformReference(data.data(), expected.data(), data.size(), 7);
  EXPECT_EQ(read(b, data.size()), expected);
  EXPECT_EQ(read(a, data.size()), data);
  expectIntact();
}

TEST_F(BadInputTest, KernelReferencingMoreThanTheDeviceFailsCleanlyWithoutHostMapping) {
  TearDown();
  Config config = smallConfig();
  config.pinnedSwap = false;
  start(config);
  DevicePtr a = allocate(768 * KiB);
  DevicePtr b = allocate(768 * KiB);
  EXPECT_EQ(transform(a, b, 1024, 0), Status::OutOfMemory);
  device::KernelLaunch unknown;
  unknown.function = 0xbad;
  EXPECT_EQ(manager_->launch(unknown), Status::InvalidHandle);
  EXPECT_EQ(transform(a, a, 768 * KiB, 1), Status::Success); // still usable
}

TEST_F(BadInputTest, FullSwapBufferRunsFromHostMemoryAndLosesNothing) {
  TearDown();
  Config config = smallConfig();
  config.swapBufferLimit = 256 * KiB;
  start(config);
  // Dirty data beyond device + swap cannot be evicted: a launch that would
  // need it runs on its pages where they are (device or host blocks), so
  // every launch succeeds and every result is exact.
  std::vector<DevicePtr> regions = allocateUpTo(4, 320 * KiB);
  ASSERT_GE(regions.size(), 3U);
  for (DevicePtr region : regions)
    ASSERT_EQ(transform(region, region, 320 * KiB, 1), Status::Success);
  std::vector<std::uint8_t> zeros(320 * KiB, 0), expected(320 * KiB);
  transformReference(zeros.data(), expected.data(), expected.size(), 1);
  for (std::size_t i = 0; i < regions.size(); ++i)
    EXPECT_EQ(read(regions[i], 320 * KiB), expected) << i;
}

TEST_F(BadInputTest, FullSwapBufferIsAnErrorNotALossWithoutHostMapping) {
  TearDown();
  Config config = smallConfig();
  config.swapBufferLimit = 256 * KiB;
  config.lazyTransfer = true;
  config.pinnedSwap = false;
  start(config);
  // Dirty data beyond device + swap cannot be evicted: the launch that would
  // need it fails with out-of-memory and all data stays readable.
  std::vector<DevicePtr> regions = allocateUpTo(4, 320 * KiB);
  ASSERT_GE(regions.size(), 3U);
  std::vector<Status> results;
  for (DevicePtr region : regions)
    results.push_back(transform(region, region, 320 * KiB, 1));
  EXPECT_NE(std::find(results.begin(), results.end(), Status::OutOfMemory), results.end());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    auto bytes = read(regions[i], 320 * KiB);
    std::vector<std::uint8_t> zeros(320 * KiB, 0), expected(320 * KiB);
    transformReference(zeros.data(), expected.data(), expected.size(), 1);
    EXPECT_EQ(bytes, ok(results[i]) ? expected : zeros) << i;
  }
}

} // namespace
} // namespace mqx::test
