// LazyTransfers on its own over the simulated device (with the page mapper
// and the swap slots it works through, no MemoryManager): copies and memsets
// that no device work can see become host images, those that in-flight work
// may reach are left to the device, and a copy-on-write source keeps the
// page's bytes when it changes.
#include "core/lazy_transfers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/host_image.hpp"
#include "core_parts.hpp"

namespace mqx::test {
namespace {

class LazyTransfersTest : public ::testing::Test {
protected:
  // The page's bytes, wherever its valid copy is.
  std::vector<std::uint8_t> content(const Region& region, std::uint32_t index) {
    const PageState& page = region.pages[index];
    std::vector<std::uint8_t> bytes(kPartPage);
    if (page.deviceValid())
      std::memcpy(bytes.data(), CoreParts::mapped(region, index), kPartPage);
    else
      readHostImage(page.host(), 0, kPartPage, reinterpret_cast<std::byte*>(bytes.data()));
    return bytes;
  }
  static Piece whole(std::uint32_t page) { return Piece{page, 0, kPartPage, 0}; }
  static std::vector<std::uint8_t> filledWith(std::uint8_t value) {
    return std::vector<std::uint8_t>(kPartPage, value);
  }

  CoreParts parts_{2, 4};
  LazyTransfers lazy_{LazyTransferOptions{}, parts_.mapper,  parts_.slots,     parts_.cow,
                      parts_.directory,      parts_.backend, parts_.statistics};
};

TEST_F(LazyTransfersTest, AWholePageCopyBecomesASwapImage) {
  Region& region = parts_.mappedRegion(1);
  const std::vector<std::uint8_t> source = filledWith(9);
  bool done = false;
  ASSERT_EQ(lazy_.copyFromHost(region, whole(0), reinterpret_cast<const std::byte*>(source.data()), CowExtent{}, &done),
            Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::Swap);
  EXPECT_FALSE(region.pages[0].deviceValid()); // loaded when a launch reads it
  EXPECT_EQ(content(region, 0), source);
  EXPECT_EQ(parts_.statistics.bytesCopiedOnHost, kPartPage);
}

TEST_F(LazyTransfersTest, ACopyOnWriteSourceKeepsThePageBytesWhenItChanges) {
  Region& region = parts_.mappedRegion(1);
  HostPages source(kPartPage);
  std::memset(source.data(), 4, kPartPage);
  bool done = false;
  ASSERT_EQ(lazy_.copyFromHost(region, whole(0), source.data(), CowExtent{true, 0, 0}, &done), Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::CowSource);
  EXPECT_TRUE(parts_.cow.overlapsProtected(reinterpret_cast<std::uintptr_t>(source.data()), kPartPage));

  // The application is about to write its buffer: the page saves its bytes.
  ASSERT_EQ(lazy_.prepareHostWrite(reinterpret_cast<std::uintptr_t>(source.data()), kPartPage), Status::Success);
  EXPECT_FALSE(parts_.cow.anyProtected());
  std::memset(source.data(), 5, kPartPage);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::Swap);
  EXPECT_EQ(content(region, 0), filledWith(4));
  EXPECT_EQ(parts_.statistics.cowBytesSaved, kPartPage);
}

TEST_F(LazyTransfersTest, AFillIsADescriptionAndAPartialFillWritesTheImage) {
  Region& region = parts_.mappedRegion(1);
  bool done = false;
  ASSERT_EQ(lazy_.fill(region, whole(0), 0x33, 1, &done), Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::Fill);
  // Part of the page: its image becomes a swap slot, written there.
  ASSERT_EQ(lazy_.fill(region, Piece{0, 100, 50, 0}, 0x44, 1, &done), Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::Swap);
  std::vector<std::uint8_t> expected = filledWith(0x33);
  std::memset(expected.data() + 100, 0x44, 50);
  EXPECT_EQ(content(region, 0), expected);
}

TEST_F(LazyTransfersTest, APageInUseIsLeftToTheDevice) {
  Region& region = parts_.mappedRegion(1);
  ASSERT_EQ(PageStore::pin(region.pages[0]), Status::Success);
  const std::vector<std::uint8_t> source = filledWith(1);
  bool done = true;
  ASSERT_EQ(lazy_.copyFromHost(region, whole(0), reinterpret_cast<const std::byte*>(source.data()), CowExtent{}, &done),
            Status::Success);
  EXPECT_FALSE(done);
  ASSERT_EQ(lazy_.fill(region, whole(0), 1, 1, &done), Status::Success);
  EXPECT_FALSE(done);
  EXPECT_EQ(region.pages[0].host().kind, HostImageKind::Zero); // unchanged
  ASSERT_EQ(PageStore::unpin(region.pages[0]), Status::Success);
}

TEST_F(LazyTransfersTest, ALaunchThatMayReachEveryPageKeepsBlocksFromTheHostSide) {
  Region& region = parts_.mappedRegion(3); // page 2 on a host block
  ASSERT_TRUE(region.pages[2].hostMapped());
  Gate gate(parts_.backend);
  parts_.mapper.reachesEveryPage(gate.closeOn(0));
  bool done = true;
  ASSERT_EQ(lazy_.fill(region, whole(2), 7, 1, &done), Status::Success);
  EXPECT_FALSE(done); // a kernel may be writing the block
  ASSERT_EQ(lazy_.fill(region, whole(0), 7, 1, &done), Status::Success);
  EXPECT_TRUE(done); // on the device: kernels do not read its image

  gate.open();
  ASSERT_EQ(parts_.mapper.waitForEveryPageWork(), Status::Success);
  ASSERT_EQ(lazy_.fill(region, whole(2), 7, 1, &done), Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(content(region, 2), filledWith(7));
}

TEST_F(LazyTransfersTest, ADeviceToDeviceCopyOfAnImageCopiesTheImage) {
  Region& from = parts_.mappedRegion(1);
  Region& to = parts_.mappedRegion(1);
  const std::vector<std::uint8_t> source = filledWith(6);
  bool done = false;
  ASSERT_EQ(lazy_.copyFromHost(from, whole(0), reinterpret_cast<const std::byte*>(source.data()), CowExtent{}, &done),
            Status::Success);
  ASSERT_EQ(lazy_.copyImage(to, whole(0), from, from.base, &done), Status::Success);
  EXPECT_TRUE(done);
  EXPECT_EQ(to.pages[0].host().kind, HostImageKind::Swap);
  EXPECT_NE(to.pages[0].host().slot, from.pages[0].host().slot); // a slot of its own
  EXPECT_EQ(content(to, 0), source);
}

TEST_F(LazyTransfersTest, ASourceOnABlockThatWorkMayWriteIsCopiedOnTheDevice) {
  Region& from = parts_.mappedRegion(3); // page 2 on its block
  Region& to = parts_.mappedRegion(1);
  ASSERT_EQ(parts_.mapper.materialize(from, 2), Status::Success); // its block holds its bytes
  Gate gate(parts_.backend);
  parts_.mapper.reachesEveryPage(gate.closeOn(0));
  bool done = true;
  ASSERT_EQ(lazy_.copyImage(to, whole(0), from, from.pageAddress(2), &done), Status::Success);
  EXPECT_FALSE(done);
}

// Random lazy copies, fills and device-to-device copies among a few pages
// that no device work uses: every page holds what a plain model says.
class LazyTransfersRandomTest : public LazyTransfersTest, public ::testing::WithParamInterface<std::uint64_t> {};

TEST_P(LazyTransfersRandomTest, PagesHoldWhatWasWritten) {
  const std::uint64_t seed = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  Region& region = parts_.mappedRegion(4);
  std::vector<std::vector<std::uint8_t>> model(region.pageCount(), filledWith(0));
  HostPages buffers(4 * kPartPage); // copy-on-write sources, changed now and then
  for (int step = 0; step < 300 && !HasFailure(); ++step) {
    const auto page = static_cast<std::uint32_t>(random() % region.pageCount());
    const std::size_t offset = random() % 2 == 0 ? 0 : random() % kPartPage;
    const std::size_t bytes = offset == 0 && random() % 2 == 0 ? kPartPage : 1 + random() % (kPartPage - offset);
    const Piece piece{page, offset, bytes, 0};
    bool done = false;
    switch (random() % 4) {
    case 0: { // a copy from a buffer, copy-on-write where whole host pages allow
      std::byte* source = buffers.data() + (random() % 4) * kPartPage;
      const auto value = static_cast<std::uint8_t>(random());
      ASSERT_EQ(lazy_.prepareHostWrite(reinterpret_cast<std::uintptr_t>(source), bytes), Status::Success);
      std::memset(source, value, bytes);
      ASSERT_EQ(lazy_.copyFromHost(region, piece, source, CowExtent{true, 0, 0}, &done), Status::Success);
      if (done) std::memset(model[page].data() + offset, value, bytes);
      break;
    }
    case 1: { // a memset
      const auto value = static_cast<std::uint8_t>(random());
      ASSERT_EQ(lazy_.fill(region, piece, value, 1, &done), Status::Success);
      if (done) std::memset(model[page].data() + offset, value, bytes);
      break;
    }
    case 2: { // a copy of a whole page from another
      const auto source = static_cast<std::uint32_t>(random() % region.pageCount());
      ASSERT_EQ(lazy_.copyImage(region, whole(page), region, region.pageAddress(source), &done), Status::Success);
      if (done) model[page] = model[source];
      break;
    }
    case 3: { // the application writes a buffer a page may read
      std::byte* buffer = buffers.data() + (random() % 4) * kPartPage;
      ASSERT_EQ(lazy_.prepareHostWrite(reinterpret_cast<std::uintptr_t>(buffer), kPartPage), Status::Success);
      std::memset(buffer, static_cast<int>(random() & 0xFF), kPartPage);
      break;
    }
    }
    EXPECT_EQ(content(region, page), model[page]) << "step " << step;
  }
  for (std::uint32_t page = 0; page < region.pageCount(); ++page)
    EXPECT_EQ(content(region, page), model[page]) << "page " << page;
  ASSERT_EQ(lazy_.prepareHostWrite(reinterpret_cast<std::uintptr_t>(buffers.data()), buffers.size()), Status::Success);
}

INSTANTIATE_TEST_SUITE_P(Seeds, LazyTransfersRandomTest, ::testing::Range<std::uint64_t>(1, 21));

} // namespace
} // namespace mqx::test
