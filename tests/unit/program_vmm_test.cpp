// The program's own VMM on the simulated device (vmm_hooks.cpp's model):
// the program reserves a range, and each allocation it maps there becomes a
// region of mqx's at that address (MemoryManager::adopt), paged and counted
// like any allocation, with the range left the program's when it ends. A
// seeded sequence of writes and transforms over adopted regions and ordinary
// ones, 1.5 times the device together, is compared with the same work on
// host vectors (the reference: no limit, no paging).
#include <random>

#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;

class ProgramVmm : public ManagerTest {
protected:
  // A range the program reserved itself (cuMemAddressReserve).
  DevicePtr reserve(std::size_t bytes) {
    DevicePtr base = 0;
    EXPECT_EQ(backend_->reserve(bytes, &base), Status::Success);
    return base;
  }
};

TEST_F(ProgramVmm, AdoptedRegionsArePagedAndKeepTheirBytesAgainstAReference) {
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  // The device holds 1 MiB: four adopted 256 KiB allocations in one reserved
  // range and two ordinary 256 KiB ones are 1.5 MiB.
  constexpr std::size_t kPiece = 256 * KiB;
  const DevicePtr range = reserve(8 * kPiece);
  std::vector<DevicePtr> regions;
  for (std::size_t i = 0; i < 4; ++i) {
    const DevicePtr address = range + (2 * i + 1) * kPiece; // gaps between them, as a program may leave
    ASSERT_EQ(manager_->adopt(address, kPiece), Status::Success);
    regions.push_back(address);
  }
  regions.push_back(allocate(kPiece));
  regions.push_back(allocate(kPiece));
  std::vector<std::vector<std::uint8_t>> reference(regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    reference[i] = pattern(kPiece, static_cast<std::uint8_t>(i * 17 + 1));
    ASSERT_EQ(manager_->copyHostToDevice(regions[i], reference[i].data(), kPiece, 0, true), Status::Success);
  }
  for (int step = 0; step < 40; ++step) {
    const std::size_t in = random() % regions.size();
    std::size_t out = random() % regions.size();
    if (out == in) out = (out + 1) % regions.size();
    const auto transformSeed = static_cast<std::uint8_t>(random());
    ASSERT_EQ(transform(regions[in], regions[out], kPiece, transformSeed), Status::Success) << "step " << step;
    transformReference(reference[in].data(), reference[out].data(), kPiece, transformSeed);
  }
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  EXPECT_GT(manager_->statistics().evictions, 0u) << "1.5 times the device: something was evicted";
  for (std::size_t i = 0; i < regions.size(); ++i)
    EXPECT_EQ(read(regions[i], kPiece), reference[i]) << "region " << i;
  // The adopted regions end; the range stays reserved and the program may
  // map there again.
  for (std::size_t i = 0; i < 4; ++i)
    ASSERT_EQ(manager_->free(regions[i]), Status::Success);
  ASSERT_EQ(manager_->adopt(range, 2 * kPiece), Status::Success);
  auto fresh = pattern(2 * kPiece, 99);
  ASSERT_EQ(manager_->copyHostToDevice(range, fresh.data(), fresh.size(), 0, true), Status::Success);
  EXPECT_EQ(read(range, fresh.size()), fresh);
  ASSERT_EQ(manager_->free(range), Status::Success);
  EXPECT_EQ(backend_->release(range, 8 * kPiece), Status::Success) << "the program releases its range";
}

TEST_F(ProgramVmm, AdoptRefusesWhatTheDriverWouldNotMap) {
  const std::size_t granularity = backend_->granularity();
  const DevicePtr range = reserve(4 * granularity);
  EXPECT_EQ(manager_->adopt(range + 1, granularity), Status::InvalidValue) << "an unaligned address";
  EXPECT_EQ(manager_->adopt(range, granularity + 1), Status::InvalidValue) << "a size off the granularity";
  EXPECT_EQ(manager_->adopt(range, 0), Status::InvalidValue);
  ASSERT_EQ(manager_->adopt(range, 2 * granularity), Status::Success);
  EXPECT_EQ(manager_->adopt(range + granularity, 2 * granularity), Status::InvalidValue) << "overlaps a region";
  ASSERT_EQ(manager_->free(range), Status::Success);
  EXPECT_EQ(backend_->release(range, 4 * granularity), Status::Success);
}

} // namespace
} // namespace mqx::test
