// A memory manager whose swap buffer takes its host blocks from a node's
// pool (BorrowedHostBlocks over a HostBlockLender), against the same work's
// expected bytes: evicted pages map lent blocks, every byte survives, and
// the blocks go back to the pool with the manager. Where the pool cannot
// serve (blocks of another size, too few) the manager creates its own.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "ipc/borrowed_host_blocks.hpp"
#include "ipc/host_block_lending.hpp"
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;
constexpr auto kPatience = std::chrono::milliseconds(500);

class LentHostBlocksTest : public ManagerTest {
protected:
  void SetUp() override {} // each test starts with its pool

  // A pool of `blocks` blocks of `blockBytes` on a backend of its own (the
  // node's), and the manager (smallConfig: 1 MiB device, 64 KiB pages)
  // borrowing from it.
  void startWithPool(std::size_t blockBytes, std::size_t blocks) {
    config_ = smallConfig();
    nodeBackend_ = std::make_unique<device::SimBackend>(embedded::simBackendOptions(config_));
    socket_ = "mqx-test-lent-" + std::to_string(::getpid()) + "-" + std::to_string(++pools_);
    lender_ =
        std::make_unique<ipc::HostBlockLender>(*nodeBackend_, ipc::HostBlockLenderOptions{socket_, blockBytes, blocks});
    std::string error;
    ASSERT_EQ(lender_->start(&error), Status::Success) << error;
    hook::registerHostMemoryManager(nullptr);
    manager_.reset();
    backend_ = std::make_unique<device::SimBackend>(embedded::simBackendOptions(config_));
    kernels_ = std::make_unique<SimKernels>(*backend_);
    borrowed_ = std::make_shared<ipc::BorrowedHostBlocks>(*backend_, socket_, kPatience);
    manager_ = std::make_unique<MemoryManager>(embedded::managerOptions(config_), *backend_, nullptr, borrowed_);
    hook::registerHostMemoryManager(manager_.get());
  }
  void TearDown() override {
    ManagerTest::TearDown();
    borrowed_.reset();
    lender_.reset();
  }

  // Four regions of the device's size each, written, transformed on the
  // device (so pages are loaded and evicted over and over), read back.
  void runBeyondTheDevice() {
    const std::size_t bytes = 1024 * KiB;
    std::vector<DevicePtr> in, out;
    std::vector<std::vector<std::uint8_t>> data;
    for (std::uint8_t k = 0; k < 4; ++k) {
      data.push_back(pattern(bytes, static_cast<std::uint8_t>(k * 31 + 1)));
      in.push_back(allocate(bytes));
      out.push_back(allocate(bytes));
      ASSERT_EQ(manager_->copyHostToDevice(in[k], data[k].data(), bytes, 0, true), Status::Success);
    }
    for (std::uint8_t k = 0; k < 4; ++k)
      ASSERT_EQ(transform(in[k], out[k], bytes, static_cast<std::uint8_t>(k + 3)), Status::Success);
    ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
    for (std::uint8_t k = 0; k < 4; ++k) {
      auto expected = data[k];
      transformReference(data[k].data(), expected.data(), bytes, static_cast<std::uint8_t>(k + 3));
      EXPECT_EQ(read(out[k], bytes), expected) << "region " << int(k);
      EXPECT_EQ(read(in[k], bytes), data[k]) << "region " << int(k);
    }
    EXPECT_GT(manager_->statistics().evictions, 0U) << "the work went beyond the device";
  }

  // Waits (bounded) for the pool to have every block back.
  bool allBack() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (lender_->lentBlocks() != 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return lender_->lentBlocks() == 0;
  }

  std::unique_ptr<device::SimBackend> nodeBackend_;
  std::unique_ptr<ipc::HostBlockLender> lender_;
  std::shared_ptr<ipc::BorrowedHostBlocks> borrowed_;
  std::string socket_;
  int pools_ = 0;
};

TEST_F(LentHostBlocksTest, EvictedPagesMapLentBlocksAndEveryByteSurvives) {
  startWithPool(64 * KiB, 256);
  runBeyondTheDevice();
  EXPECT_GT(borrowed_->borrowedBytes(), 0U) << "the swap buffer took the pool's blocks";
  EXPECT_EQ(lender_->lentBlocks() * 64 * KiB, borrowed_->heldBytes());
  // The exit line's gauges say so too (run-peers reads them).
  const Statistics statistics = manager_->statistics();
  EXPECT_EQ(statistics.swapBytesBorrowed, borrowed_->heldBytes());
  EXPECT_GE(statistics.swapBytesHeld, statistics.swapBytesBorrowed);
  hook::registerHostMemoryManager(nullptr); // before the manager goes (manager_fixture.hpp)
  manager_.reset();
  EXPECT_EQ(borrowed_->heldBytes(), 0U);
  EXPECT_TRUE(allBack()) << lender_->lentBlocks() << " blocks still lent after the manager went";
}

TEST_F(LentHostBlocksTest, APoolOfAnotherBlockSizeIsLeftAndBlocksAreCreatedHere) {
  startWithPool(128 * KiB, 16);
  runBeyondTheDevice();
  EXPECT_EQ(borrowed_->borrowedBytes(), 0U);
  EXPECT_EQ(lender_->lentBlocks(), 0U);
}

TEST_F(LentHostBlocksTest, WhatTheEmptiedPoolCannotGiveIsCreatedHere) {
  startWithPool(64 * KiB, 3);
  runBeyondTheDevice();
  EXPECT_EQ(borrowed_->borrowedBytes(), 3 * 64 * KiB) << "all three, then blocks of its own";
  EXPECT_EQ(manager_->statistics().swapBytesBorrowed, 3 * 64 * KiB);
  EXPECT_GT(manager_->statistics().swapBytesHeld, 3 * 64 * KiB) << "and blocks created here";
  EXPECT_EQ(lender_->freeBlocks(), 0U);
}

} // namespace
} // namespace mqx::test
