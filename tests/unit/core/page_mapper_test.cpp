// PageMapper on its own over the simulated device: each mapping transition
// keeps the budget, the device's mappings and the swap buffer in step with
// the pages, every path gives back what it took, and the one reachability
// rule answers as docs/architecture.md says.
#include "core/page_mapper.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "core/host_image.hpp"
#include "core_parts.hpp"

namespace mqx::test {
namespace {

class PageMapperTest : public ::testing::Test {
protected:
  // Device memory, host blocks and slots as the pages say they should be.
  void expectAccounted(const char* when) {
    std::size_t backed = 0;
    std::size_t onBlocks = 0;
    std::set<const std::byte*> held; // slots the pages hold: their blocks and swap images
    parts_.directory.forEach([&](Region& region) {
      for (const PageState& page : region.pages) {
        backed += page.backed() ? kPartPage : 0;
        onBlocks += page.hostMapped() ? kPartPage : 0;
        if (page.hostMapped()) held.insert(page.backing());
        if (page.host().kind == HostImageKind::Swap) held.insert(page.host().slot);
        EXPECT_EQ(PageStore::inconsistency(page), nullptr) << when;
      }
    });
    EXPECT_EQ(parts_.budget.used(), backed) << when;
    EXPECT_EQ(parts_.backend.mappedBytes(), backed) << when;
    EXPECT_EQ(parts_.backend.hostMappedBytes(), onBlocks) << when;
    parts_.slots.reclaim(true);
    EXPECT_EQ(parts_.slots.usedBytes(), held.size() * kPartPage) << when;
  }

  CoreParts parts_{2, 4};
  PageMapper& mapper_ = parts_.mapper;
};

TEST_F(PageMapperTest, AReservationGivesItsBytesBackUnlessAPageTookThem) {
  {
    BudgetReservation reservation = mapper_.reserve(kPartPage);
    ASSERT_TRUE(reservation);
    EXPECT_EQ(parts_.budget.used(), kPartPage);
    BudgetReservation moved = std::move(reservation);
    EXPECT_FALSE(reservation); // NOLINT(bugprone-use-after-move): a moved-from reservation holds nothing
    EXPECT_EQ(moved.bytes(), kPartPage);
  }
  EXPECT_EQ(parts_.budget.used(), 0U);
  BudgetReservation all = mapper_.reserve(2 * kPartPage);
  EXPECT_TRUE(all);
  EXPECT_FALSE(mapper_.reserve(kPartPage)); // no room: empty, nothing taken
  EXPECT_EQ(parts_.budget.used(), 2 * kPartPage);
}

TEST_F(PageMapperTest, ANewRegionGetsDeviceMemoryWhileTheBudgetLastsThenHostBlocks) {
  const std::uint64_t version = mapper_.version();
  const std::uint64_t pending = mapper_.pendingPagesMade();
  Region& region = parts_.mappedRegion(3);
  EXPECT_TRUE(region.pages[0].backed());
  EXPECT_TRUE(region.pages[1].backed());
  EXPECT_TRUE(region.pages[2].hostMapped());
  EXPECT_TRUE(region.pages[2].pending()); // its zeros are not in its block yet
  EXPECT_EQ(mapper_.pendingPagesMade(), pending + 1);
  EXPECT_NE(mapper_.version(), version);
  expectAccounted("after mapNewRegion");

  ASSERT_EQ(mapper_.materialize(region, 2), Status::Success);
  EXPECT_FALSE(region.pages[2].pending());
  EXPECT_EQ(CoreParts::mapped(region, 2)[123], 0); // the block holds the zeros
  expectAccounted("after materialize");
}

TEST_F(PageMapperTest, ALeavingHostBlockGoesBackUnlessItIsTheImage) {
  Region& region = parts_.mappedRegion(3);
  ASSERT_EQ(mapper_.unmapFromDevice(region, 0), Status::Success); // room for page 2
  ASSERT_EQ(mapper_.mapToHost(region, 0), Status::Success);
  expectAccounted("page 0 on a block");
  // Page 2 holds zeros (pending): its block holds nothing it needs.
  ASSERT_EQ(mapper_.mapToDevice(region, 2, mapper_.reserve(kPartPage)), Status::Success);
  EXPECT_TRUE(region.pages[2].backed());
  EXPECT_EQ(region.pages[2].host().kind, HostImageKind::Zero);
  expectAccounted("pending page 2 on the device");

  // Page 0 was materialized on its block: the block stays as its image.
  ASSERT_EQ(mapper_.unmapFromDevice(region, 1), Status::Success);
  ASSERT_EQ(mapper_.mapToHost(region, 1), Status::Success);
  ASSERT_EQ(mapper_.materialize(region, 0), Status::Success);
  std::byte* block = region.pages[0].backing();
  ASSERT_EQ(mapper_.mapToDevice(region, 0, mapper_.reserve(kPartPage)), Status::Success);
  EXPECT_EQ(region.pages[0].host().slot, block);
  expectAccounted("page 0 back on the device, its block its image");
}

TEST_F(PageMapperTest, ADeviceFullerThanTheBudgetLeavesThePageOnItsBlock) {
  CoreParts parts(4, 2); // a budget of 4 pages on a device of 2
  Region& region = parts.mappedRegion(3);
  ASSERT_TRUE(region.pages[2].backed() == false && region.pages[2].hostMapped());
  std::byte* block = region.pages[2].backing();
  EXPECT_EQ(parts.mapper.mapToDevice(region, 2, parts.mapper.reserve(kPartPage)), Status::OutOfMemory);
  EXPECT_EQ(region.pages[2].backing(), block);
  EXPECT_EQ(parts.backend.hostMappedBytes(), kPartPage); // mapped again
  EXPECT_EQ(parts.budget.used(), 2 * kPartPage);         // the reservation went back
}

TEST_F(PageMapperTest, AReservationForAnotherPageIsRefused) {
  Region& region = parts_.addRegion(1);
  EXPECT_EQ(mapper_.mapToDevice(region, 0, mapper_.reserve(kPartPage / 2)), Status::InvalidValue);
  EXPECT_EQ(parts_.budget.used(), 0U);
  EXPECT_FALSE(region.pages[0].backed());
}

TEST_F(PageMapperTest, ABlockThatCannotBeMappedGoesBack) {
  Region& region = parts_.mappedRegion(1);
  ASSERT_TRUE(region.pages[0].backed());
  const std::size_t used = parts_.slots.usedBytes();
  // A block for a page whose device memory is still mapped: the device
  // refuses it, the page stays as it was and the block goes back.
  std::vector<BlockForPage> blocks;
  blocks.push_back(BlockForPage{0, nullptr, parts_.slots.acquire(kPartPage, false, true)});
  ASSERT_TRUE(blocks.back().newBlock);
  EXPECT_EQ(mapper_.mapBlocks(region, blocks), Status::Success); // left unmapped, said once
  blocks.clear();
  EXPECT_EQ(parts_.slots.usedBytes(), used);
  EXPECT_TRUE(region.pages[0].backed());
  expectAccounted("after a refused block");
}

TEST_F(PageMapperTest, HandingBackAnImageGivesBackWhatItHeld) {
  Region& region = parts_.mappedRegion(1);
  PageState& page = region.pages[0];
  SwapSlot slot = parts_.slots.acquire(kPartPage);
  std::byte* image = slot.get();
  std::memset(image, 7, kPartPage);
  ASSERT_EQ(mapper_.handBack(region, 0, PageStore::imageReplaced(page, HostImage::inSwap(image)), slot),
            Status::Success);
  EXPECT_FALSE(slot); // the page took it
  expectAccounted("a swap image");

  // A copy-on-write source replaces it: the slot goes back, the buffer is
  // protected until the page lets go of it.
  HostPages buffer(kPartPage);
  const std::byte* source = buffer.data();
  ASSERT_TRUE(parts_.cow.protect(source, kPartPage, PageKey{region.id, 0}));
  const std::uint64_t version = mapper_.version();
  ASSERT_EQ(mapper_.handBack(region, 0, PageStore::imageReplaced(page, HostImage::inBuffer(source))), Status::Success);
  EXPECT_NE(mapper_.version(), version);
  expectAccounted("a copy-on-write image");
  EXPECT_FALSE(parts_.cow.empty());
  ASSERT_EQ(mapper_.handBack(region, 0, PageStore::imageReplaced(page, HostImage::of(HostImageKind::Zero))),
            Status::Success);
  EXPECT_TRUE(parts_.cow.empty()); // the record is gone (its pages linger until written)
  parts_.cow.releaseLingering(reinterpret_cast<std::uintptr_t>(source), kPartPage);
  EXPECT_FALSE(parts_.cow.anyProtected());

  // A refused transition hands back nothing and says why.
  ASSERT_EQ(PageStore::pin(page), Status::Success);
  EXPECT_EQ(mapper_.handBack(region, 0, PageStore::imageReplaced(page, HostImage::of(HostImageKind::Zero))),
            Status::Unknown);
  ASSERT_EQ(PageStore::unpin(page), Status::Success);
}

TEST_F(PageMapperTest, AWriteBackRefusedGivesItsSlotBack) {
  Region& region = parts_.mappedRegion(1);
  const std::size_t used = parts_.slots.usedBytes();
  // The page is not dirty (zeros on the device, not loaded): refused.
  EXPECT_EQ(mapper_.wroteBack(region.pages[0], parts_.slots.acquire(kPartPage)), Status::Unknown);
  EXPECT_EQ(parts_.slots.usedBytes(), used);
}

TEST_F(PageMapperTest, InFlightWorkReachesWhatTheRuleSays) {
  Region& region = parts_.mappedRegion(3); // pages 0 and 1 on the device, page 2 on a block
  const PageState& onDevice = region.pages[0];
  const PageState& onBlock = region.pages[2];
  for (const PageState* page : {&onDevice, &onBlock})
    for (PageAccess access : {PageAccess::ReadImage, PageAccess::WriteImage, PageAccess::Remap})
      EXPECT_FALSE(mapper_.mayBeReached(*page, access)) << "nothing runs";

  // A launch whose references are not known reaches whatever is mapped:
  // remapping waits for it; the image of a page on the device is not
  // reached (kernels read device memory), that of a page on its block is.
  Gate gate(parts_.backend);
  mapper_.reachesEveryPage(gate.closeOn(0));
  EXPECT_TRUE(mapper_.everyPageReachable());
  EXPECT_TRUE(mapper_.mayBeReached(onDevice, PageAccess::Remap));
  EXPECT_FALSE(mapper_.mayBeReached(onDevice, PageAccess::WriteImage));
  EXPECT_FALSE(mapper_.mayBeReached(onDevice, PageAccess::ReadImage));
  EXPECT_TRUE(mapper_.mayBeReached(onBlock, PageAccess::Remap));
  EXPECT_TRUE(mapper_.mayBeReached(onBlock, PageAccess::WriteImage));
  EXPECT_TRUE(mapper_.mayBeReached(onBlock, PageAccess::ReadImage));
  const Region& unmapped = parts_.addRegion(1);
  EXPECT_FALSE(mapper_.mayBeReached(unmapped.pages[0], PageAccess::Remap)); // nothing mapped to reach
  EXPECT_EQ(mapper_.everyPageLaunches(), 1U);

  gate.open();
  ASSERT_EQ(mapper_.waitForEveryPageWork(), Status::Success);
  EXPECT_FALSE(mapper_.everyPageReachable());
  EXPECT_FALSE(mapper_.mayBeReached(onBlock, PageAccess::Remap));

  // Work that names a page pinned it: its content is in use, wherever it is.
  PageState& pinned = region.pages[1];
  ASSERT_EQ(PageStore::pin(pinned), Status::Success);
  EXPECT_TRUE(mapper_.mayBeReached(pinned, PageAccess::Remap));
  EXPECT_TRUE(mapper_.mayBeReached(pinned, PageAccess::WriteImage));
  EXPECT_FALSE(mapper_.mayBeReached(pinned, PageAccess::ReadImage)); // on the device: its image is the host's
  ASSERT_EQ(PageStore::unpin(pinned), Status::Success);
}

TEST_F(PageMapperTest, ReleasingARegionGivesBackEverything) {
  Region& first = parts_.mappedRegion(3);
  Region& second = parts_.mappedRegion(2);
  expectAccounted("two regions");
  parts_.free(first);
  parts_.free(second);
  parts_.slots.reclaim(true);
  EXPECT_EQ(parts_.budget.used(), 0U);
  EXPECT_EQ(parts_.backend.mappedBytes(), 0U);
  EXPECT_EQ(parts_.backend.hostMappedBytes(), 0U);
  EXPECT_EQ(parts_.slots.usedBytes(), 0U);
}

// Random sequences of mapping transitions: after each step the budget, the
// device's mappings and the swap buffer match what the pages hold, and
// every page keeps the bytes last written to it.
class PageMapperRandomTest : public PageMapperTest, public ::testing::WithParamInterface<std::uint64_t> {};

TEST_P(PageMapperRandomTest, TransitionsKeepEverythingAccounted) {
  const std::uint64_t seed = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  Region& region = parts_.mappedRegion(6);
  std::vector<std::uint8_t> expected(region.pageCount(), 0); // each page's byte value
  for (int step = 0; step < 400 && !HasFailure(); ++step) {
    const std::uint32_t index = static_cast<std::uint32_t>(random() % region.pageCount());
    PageState& page = region.pages[index];
    switch (random() % 4) {
    case 0: // to the device, if the budget has room
      if (page.backed()) break;
      if (BudgetReservation reservation = mapper_.reserve(kPartPage)) {
        ASSERT_EQ(mapper_.materialize(region, index), Status::Success);
        ASSERT_EQ(mapper_.mapToDevice(region, index, std::move(reservation)), Status::Success);
        if (page.host().kind != HostImageKind::None) {
          // A load, done here by hand: the device copy becomes valid.
          std::vector<std::byte> bytes(kPartPage);
          readHostImage(page.host(), 0, kPartPage, bytes.data());
          std::memcpy(reinterpret_cast<void*>(region.pageAddress(index)), bytes.data(), kPartPage);
          ASSERT_EQ(mapper_.loaded(page), Status::Success);
        }
      }
      break;
    case 1: { // written on the device, then back to its block
      if (!page.backed()) break;
      expected[index] = static_cast<std::uint8_t>(random());
      std::memset(reinterpret_cast<void*>(region.pageAddress(index)), expected[index], kPartPage);
      ASSERT_EQ(mapper_.handBack(region, index, PageStore::writtenOnDevice(page)), Status::Success);
      SwapSlot slot = parts_.slots.acquire(kPartPage, false, true);
      ASSERT_TRUE(slot);
      std::memcpy(slot.get(), reinterpret_cast<const void*>(region.pageAddress(index)), kPartPage);
      std::byte* image = slot.get();
      ASSERT_EQ(mapper_.wroteBack(page, std::move(slot)), Status::Success);
      ASSERT_EQ(mapper_.unmapFromDevice(region, index), Status::Success);
      std::vector<BlockForPage> blocks;
      blocks.push_back(BlockForPage{index, image, {}});
      ASSERT_EQ(mapper_.mapBlocks(region, blocks), Status::Success);
      break;
    }
    case 2: // a lazy fill of the whole page
      expected[index] = static_cast<std::uint8_t>(random());
      ASSERT_EQ(mapper_.handBack(region, index, PageStore::imageReplaced(page, HostImage::filled(1, expected[index]))),
                Status::Success);
      break;
    case 3: // leaves the device without a write-back: clean pages only
      if (!page.backed() || page.dirty()) break;
      ASSERT_EQ(mapper_.unmapFromDevice(region, index), Status::Success);
      ASSERT_EQ(mapper_.mapToHost(region, index), Status::Success);
      break;
    }
    expectAccounted(("step " + std::to_string(step)).c_str());
  }
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    const PageState& page = region.pages[index];
    std::vector<std::byte> bytes(kPartPage);
    if (page.deviceValid())
      std::memcpy(bytes.data(), CoreParts::mapped(region, index), kPartPage);
    else
      readHostImage(page.host(), 0, kPartPage, bytes.data());
    EXPECT_EQ(static_cast<std::uint8_t>(bytes[kPartPage - 1]), expected[index]) << "page " << index;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PageMapperRandomTest, ::testing::Range<std::uint64_t>(1, 21));

} // namespace
} // namespace mqx::test
