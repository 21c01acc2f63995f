// Eviction's failure paths (residency_eviction.cpp): an eviction that fails
// after it took swap slots gives every one of them back, and the victim
// keeps its bytes. The failures are injected into the simulated device
// (SimFaults::failCopyToHostAt: the write-back of the Nth page refused).
#include <gtest/gtest.h>

#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t kPage = 64 * 1024;

class EvictionFailureTest : public ManagerTest {
protected:
  // A device of two pages, copies and memsets run on it (no host images):
  // a region written by a copy holds its only copy on the device.
  void SetUp() override {
    Config config = smallConfig();
    config.simCapacity = 2 * kPage;
    config.lazyTransfer = false;
    start(config);
  }

  std::size_t swapUsed() const {
    const auto usage = manager_->tryUsage();
    EXPECT_TRUE(usage.has_value());
    return usage ? usage->swapUsedBytes : 0;
  }

  // The two-page region `dirty` fills the device with its only copy; the
  // one-page region `next` waits on its host block. A memset of `next`
  // must evict `dirty`, writing back both its pages.
  void fillDevice() {
    dirty_ = allocate(2 * kPage);
    ASSERT_EQ(manager_->copyHostToDevice(dirty_, content_.data(), content_.size(), 0, true), Status::Success);
    next_ = allocate(kPage);
  }

  const std::vector<std::uint8_t> content_ = pattern(2 * kPage, 5);
  DevicePtr dirty_ = 0;
  DevicePtr next_ = 0;
};

TEST_F(EvictionFailureTest, AWriteBackRefusedAfterOthersWereIssuedGivesEverySlotBack) {
  fillDevice();
  const std::size_t usedBefore = swapUsed();
  device::SimFaults faults;
  faults.failCopyToHostAt = 2; // the first page's write-back is issued, the second's refused
  backend_->injectFaults(faults);
  EXPECT_EQ(manager_->memset(next_, 0x11, 1, kPage, 0, true), Status::IllegalAddress);
  EXPECT_EQ(swapUsed(), usedBefore) << "the failed eviction kept swap slots";

  backend_->injectFaults({});
  EXPECT_EQ(read(dirty_, content_.size()), content_); // the victim kept its bytes
  EXPECT_EQ(manager_->memset(next_, 0x11, 1, kPage, 0, true), Status::Success);
  EXPECT_EQ(read(next_, kPage), std::vector<std::uint8_t>(kPage, 0x11));
  EXPECT_EQ(read(dirty_, content_.size()), content_); // evicted now, written back whole
}

TEST_F(EvictionFailureTest, TheFirstWriteBackRefusedGivesEverySlotBack) {
  fillDevice();
  const std::size_t usedBefore = swapUsed();
  device::SimFaults faults;
  faults.failCopyToHostAt = 1;
  backend_->injectFaults(faults);
  EXPECT_EQ(manager_->memset(next_, 0x22, 1, kPage, 0, true), Status::IllegalAddress);
  EXPECT_EQ(swapUsed(), usedBefore) << "the failed eviction kept swap slots";

  backend_->injectFaults({});
  EXPECT_EQ(manager_->memset(next_, 0x22, 1, kPage, 0, true), Status::Success);
  EXPECT_EQ(read(dirty_, content_.size()), content_);
}

} // namespace
} // namespace mqx::test
