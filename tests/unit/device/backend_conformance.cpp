// The DeviceBackend conformance tests (backend_conformance.hpp): what the
// core relies on from every backend, checked the same way on each.
#include "backend_conformance.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace mqx::device::conformance {

std::string backendName(const ::testing::TestParamInfo<BackendMaker>& info) { return info.param.name; }

void PrintTo(const BackendMaker& maker, std::ostream* out) { *out << maker.name; }

void BackendConformance::SetUp() {
  std::string why;
  backend_ = GetParam().make(&why);
  if (backend_ == nullptr) GTEST_SKIP() << GetParam().name << " backend not available here: " << why;
  granularity_ = backend_->granularity();
}

void BackendConformance::TearDown() {
  if (backend_ == nullptr) return;
  for (const auto& [address, bytes] : mappings_)
    EXPECT_EQ(backend_->unmap(address, bytes), Status::Success) << "unmapping what the test left mapped";
  for (const auto& [base, bytes] : reservations_)
    EXPECT_EQ(backend_->release(base, bytes), Status::Success) << "releasing what the test reserved";
}

DevicePtr BackendConformance::reserve(std::size_t granules) {
  DevicePtr base = 0;
  const std::size_t bytes = granules * granularity_;
  EXPECT_EQ(backend_->reserve(bytes, &base), Status::Success);
  if (base != 0) reservations_.emplace_back(base, bytes);
  return base;
}

void BackendConformance::createHostBlocks(std::size_t count, std::vector<HostBlock>* blocks) {
  const Status created = backend_->createHostBlocks(granularity_, count, blocks);
  if (created == Status::NotSupported) GTEST_SKIP() << "the device cannot map host memory under its ranges";
  ASSERT_EQ(created, Status::Success);
  ASSERT_EQ(blocks->size(), count);
}

Status BackendConformance::map(DevicePtr address, std::size_t bytes) {
  const Status status = backend_->map(address, bytes);
  if (ok(status)) mappings_.emplace_back(address, bytes);
  return status;
}

void BackendConformance::forget(DevicePtr address) {
  std::erase_if(mappings_, [&](const auto& mapping) { return mapping.first == address; });
}

std::vector<unsigned char> BackendConformance::read(DevicePtr address, std::size_t bytes) {
  std::vector<unsigned char> out(bytes, 0);
  const StreamHandle stream = backend_->transferStream(TransferDirection::ToHost);
  EXPECT_EQ(backend_->copyToHost(out.data(), address, bytes, stream, false), Status::Success);
  EXPECT_EQ(backend_->synchronize(stream), Status::Success);
  return out;
}

void BackendConformance::write(DevicePtr address, const std::vector<unsigned char>& bytes) {
  const StreamHandle stream = backend_->transferStream(TransferDirection::ToDevice);
  EXPECT_EQ(backend_->copyToDevice(address, bytes.data(), bytes.size(), stream, false), Status::Success);
  EXPECT_EQ(backend_->synchronize(stream), Status::Success);
}

namespace {

std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 12)) & 0xFF);
  return out;
}

TEST_P(BackendConformance, DescribesItsMemory) {
  EXPECT_FALSE(backend().name().empty());
  ASSERT_GT(granule(), 0u);
  EXPECT_EQ(granule() & (granule() - 1), 0u) << "the granularity is a power of two";
  EXPECT_GE(backend().totalMemory(), granule());
  EXPECT_LE(backend().freeMemory(), backend().totalMemory());
}

TEST_P(BackendConformance, ReservesGranuleAlignedRangesThatDoNotOverlap) {
  const DevicePtr a = reserve(4);
  const DevicePtr b = reserve(2);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_EQ(a % granule(), 0u);
  EXPECT_EQ(b % granule(), 0u);
  EXPECT_TRUE(a + 4 * granule() <= b || b + 2 * granule() <= a);
}

TEST_P(BackendConformance, ReleasesOnlyARangeItReserved) {
  DevicePtr base = 0;
  ASSERT_EQ(backend().reserve(2 * granule(), &base), Status::Success);
  EXPECT_EQ(backend().release(base, granule()), Status::InvalidValue); // not its size
  EXPECT_EQ(backend().release(base + granule(), granule()), Status::InvalidValue);
  EXPECT_EQ(backend().release(base, 2 * granule()), Status::Success);
  EXPECT_EQ(backend().release(base, 2 * granule()), Status::InvalidValue); // released already
}

TEST_P(BackendConformance, RefusesRangesAndMappingsOfPartGranules) {
  DevicePtr base = 0;
  EXPECT_EQ(backend().reserve(0, &base), Status::InvalidValue);
  EXPECT_EQ(backend().reserve(granule() + 1, &base), Status::InvalidValue);
  const DevicePtr range = reserve(4);
  EXPECT_EQ(map(range, 0), Status::InvalidValue);
  EXPECT_EQ(map(range, granule() / 2), Status::InvalidValue);
  EXPECT_EQ(map(range + granule() / 2, granule()), Status::InvalidValue);
  EXPECT_EQ(map(range, granule()), Status::Success); // the range is still usable
}

TEST_P(BackendConformance, MappedMemoryHoldsWhatIsCopiedToIt) {
  const DevicePtr range = reserve(4);
  const DevicePtr mapped = range + granule();
  ASSERT_EQ(map(mapped, 2 * granule()), Status::Success);
  const auto whole = pattern(2 * granule(), 1);
  write(mapped, whole);
  EXPECT_EQ(read(mapped, whole.size()), whole);
  // Any offset and length inside the mapping, across the granule boundary.
  const auto piece = pattern(5000, 2);
  const DevicePtr at = mapped + granule() - 1234;
  write(at, piece);
  EXPECT_EQ(read(at, piece.size()), piece);
  auto expected = whole;
  std::copy(piece.begin(), piece.end(), expected.begin() + static_cast<std::ptrdiff_t>(granule() - 1234));
  EXPECT_EQ(read(mapped, expected.size()), expected);
}

TEST_P(BackendConformance, PinnedHostMemoryCopiesBothWays) {
  const std::size_t bytes = granule();
  void* pinned = nullptr;
  ASSERT_EQ(backend().allocateHost(bytes, &pinned), Status::Success);
  ASSERT_NE(pinned, nullptr);
  const DevicePtr range = reserve(1);
  ASSERT_EQ(map(range, bytes), Status::Success);
  const auto data = pattern(bytes, 3);
  std::memcpy(pinned, data.data(), bytes);
  const StreamHandle toDevice = backend().transferStream(TransferDirection::ToDevice);
  ASSERT_EQ(backend().copyToDevice(range, pinned, bytes, toDevice, true), Status::Success);
  ASSERT_EQ(backend().synchronize(toDevice), Status::Success);
  std::memset(pinned, 0, bytes);
  const StreamHandle toHost = backend().transferStream(TransferDirection::ToHost);
  ASSERT_EQ(backend().copyToHost(pinned, range, bytes, toHost, true), Status::Success);
  ASSERT_EQ(backend().synchronize(toHost), Status::Success);
  EXPECT_EQ(std::memcmp(pinned, data.data(), bytes), 0);
  backend().freeHost(pinned, bytes);
}

TEST_P(BackendConformance, FillsWithOneTwoAndFourBytePatternsAndCopiesOnTheDevice) {
  const DevicePtr range = reserve(2);
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  const StreamHandle stream = backend().transferStream(TransferDirection::ToDevice);
  ASSERT_EQ(backend().fill(range, 0xAB, 1, 10, stream), Status::Success);
  ASSERT_EQ(backend().fill(range + 10, 0xBEEF, 2, 3, stream), Status::Success);
  ASSERT_EQ(backend().fill(range + 16, 0x01020304, 4, 2, stream), Status::Success);
  ASSERT_EQ(backend().copyOnDevice(range + granule(), range, 24, stream), Status::Success);
  ASSERT_EQ(backend().synchronize(stream), Status::Success);
  std::vector<unsigned char> expected(24);
  std::fill_n(expected.begin(), 10, 0xAB);
  const std::uint16_t half = 0xBEEF;
  const std::uint32_t word = 0x01020304;
  for (int i = 0; i < 3; ++i)
    std::memcpy(expected.data() + 10 + 2 * i, &half, 2);
  for (int i = 0; i < 2; ++i)
    std::memcpy(expected.data() + 16 + 4 * i, &word, 4);
  EXPECT_EQ(read(range, 24), expected);
  EXPECT_EQ(read(range + granule(), 24), expected);
}

TEST_P(BackendConformance, RefusesAFillOfAnyOtherElementSize) {
  const DevicePtr range = reserve(1);
  ASSERT_EQ(map(range, granule()), Status::Success);
  const StreamHandle stream = backend().transferStream(TransferDirection::ToDevice);
  EXPECT_EQ(backend().fill(range, 0, 3, 4, stream), Status::InvalidValue);
  EXPECT_EQ(backend().fill(range, 0, 8, 4, stream), Status::InvalidValue);
}

TEST_P(BackendConformance, RefusesToMapWhatIsMappedAlready) {
  const DevicePtr range = reserve(4);
  ASSERT_EQ(map(range + granule(), granule()), Status::Success);
  EXPECT_EQ(map(range + granule(), granule()), Status::InvalidValue);
  EXPECT_EQ(map(range, 2 * granule()), Status::InvalidValue);        // overlaps it
  EXPECT_EQ(map(range + 2 * granule(), granule()), Status::Success); // beside it
}

TEST_P(BackendConformance, RefusesToUnmapWhatIsNotMapped) {
  const DevicePtr range = reserve(2);
  EXPECT_EQ(backend().unmap(range, granule()), Status::InvalidValue);
  ASSERT_EQ(map(range, granule()), Status::Success);
  EXPECT_EQ(backend().unmap(range + granule(), granule()), Status::InvalidValue);
}

TEST_P(BackendConformance, UnmappedMemoryGoesBackAndCanBeMappedAgain) {
  const DevicePtr range = reserve(2);
  const std::size_t before = backend().freeMemory();
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  EXPECT_LE(backend().freeMemory() + 2 * granule(), before) << "mapped memory is no longer free";
  ASSERT_EQ(backend().unmap(range, 2 * granule()), Status::Success);
  forget(range);
  EXPECT_EQ(backend().unmap(range, 2 * granule()), Status::InvalidValue); // unmapped already
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  const auto data = pattern(2 * granule(), 4);
  write(range, data);
  EXPECT_EQ(read(range, data.size()), data);
}

TEST_P(BackendConformance, MappingPastTheDeviceMemoryFailsWithOutOfMemory) {
  const std::size_t granules = backend().totalMemory() / granule() + 1;
  const DevicePtr range = reserve(granules);
  ASSERT_NE(range, 0u);
  EXPECT_EQ(map(range, granules * granule()), Status::OutOfMemory);
  EXPECT_EQ(map(range, granule()), Status::Success); // nothing of the failed map stays
}

TEST_P(BackendConformance, WorkOrderedAfterAnotherStreamSeesItsResults) {
  const DevicePtr range = reserve(2);
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  const auto data = pattern(2 * granule(), 5);
  std::vector<unsigned char> out(data.size(), 0);
  const StreamHandle toDevice = backend().transferStream(TransferDirection::ToDevice);
  const StreamHandle toHost = backend().transferStream(TransferDirection::ToHost);
  ASSERT_NE(toDevice, toHost);
  ASSERT_EQ(backend().copyToDevice(range, data.data(), data.size(), toDevice, false), Status::Success);
  ASSERT_EQ(backend().order(toDevice, toHost), Status::Success);
  ASSERT_EQ(backend().copyToHost(out.data(), range, out.size(), toHost, false), Status::Success);
  ASSERT_EQ(backend().synchronize(toHost), Status::Success);
  EXPECT_EQ(out, data);
  ASSERT_EQ(backend().synchronize(toDevice), Status::Success);
  EXPECT_EQ(backend().order(toHost, toHost), Status::Success); // a stream is ordered after itself
}

TEST_P(BackendConformance, FencesAreReachedInTheirStreamsOrder) {
  const DevicePtr range = reserve(2);
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  const auto data = pattern(2 * granule(), 6);
  const StreamHandle stream = backend().transferStream(TransferDirection::ToDevice);
  Fence first, second;
  ASSERT_EQ(backend().copyToDevice(range, data.data(), data.size(), stream, false), Status::Success);
  ASSERT_EQ(backend().enqueueFence(stream, &first), Status::Success);
  ASSERT_EQ(backend().fill(range, 0x5A, 1, granule(), stream), Status::Success);
  ASSERT_EQ(backend().enqueueFence(stream, &second), Status::Success);
  EXPECT_EQ(first.slot, second.slot) << "one stream, one slot";
  EXPECT_GT(second.value, first.value) << "a later fence of a stream is a larger value";
  ASSERT_EQ(backend().waitFence(second), Status::Success);
  EXPECT_TRUE(backend().fenceReached(second));
  EXPECT_TRUE(backend().fenceReached(first)) << "reaching a fence reaches every earlier one of its stream";
  // The work before the fence is done: the fill is seen, the copy under it.
  auto expected = data;
  std::fill_n(expected.begin(), granule(), 0x5A);
  EXPECT_EQ(read(range, expected.size()), expected);
}

TEST_P(BackendConformance, HostBlocksMappedUnderADeviceRangeAreTheSameBytes) {
  std::vector<HostBlock> blocks;
  createHostBlocks(2, &blocks);
  if (IsSkipped() || HasFatalFailure()) return;
  const DevicePtr range = reserve(2);
  const auto data = pattern(2 * granule(), 7);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_NE(blocks[i].host, nullptr);
    EXPECT_EQ(blocks[i].bytes, granule());
    std::memcpy(blocks[i].host, data.data() + i * granule(), granule());
  }
  const HostMapping mappings[2] = {{range, blocks[0]}, {range + granule(), blocks[1]}};
  ASSERT_EQ(backend().mapHostBlocks(mappings), Status::Success);
  // The device reads what the CPU wrote, and the CPU sees what the device writes.
  EXPECT_EQ(read(range, data.size()), data);
  const StreamHandle stream = backend().transferStream(TransferDirection::ToDevice);
  ASSERT_EQ(backend().fill(range + granule() - 8, 0x77, 1, 16, stream), Status::Success);
  ASSERT_EQ(backend().synchronize(stream), Status::Success);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(static_cast<unsigned char>(blocks[0].host[granule() - 8 + i]), 0x77);
    EXPECT_EQ(static_cast<unsigned char>(blocks[1].host[i]), 0x77);
  }
  EXPECT_EQ(backend().unmap(range, granule()), Status::Success);
  EXPECT_EQ(backend().unmap(range + granule(), granule()), Status::Success);
  // The blocks keep their bytes once unmapped: they are the caller's.
  EXPECT_EQ(static_cast<unsigned char>(blocks[1].host[8]), data[granule() + 8]);
  backend().destroyHostBlocks(blocks);
}

TEST_P(BackendConformance, AHostBlockBatchIsMappedWholeOrNotAtAll) {
  std::vector<HostBlock> blocks;
  createHostBlocks(2, &blocks);
  if (IsSkipped() || HasFatalFailure()) return;
  const DevicePtr range = reserve(4);
  // The second lies off the granularity: refused, and the first with it.
  const HostMapping mappings[2] = {{range, blocks[0]}, {range + 2 * granule() + granule() / 2, blocks[1]}};
  EXPECT_EQ(backend().mapHostBlocks(mappings), Status::InvalidValue);
  EXPECT_EQ(backend().unmap(range, granule()), Status::InvalidValue) << "nothing of a refused batch is mapped";
  EXPECT_EQ(map(range, granule()), Status::Success);
  backend().destroyHostBlocks(blocks);
}

// cuIpcGetMemHandle's mechanism (MemoryManager::share): a mapping made
// shareable keeps its bytes, and memory mapped from its descriptor elsewhere
// is the same memory both ways, after either side's mapping goes.
TEST_P(BackendConformance, ASharedMappingKeepsItsBytesAndIsTheSameMemoryWhereverMapped) {
  const DevicePtr range = reserve(2);
  ASSERT_EQ(map(range, 2 * granule()), Status::Success);
  const auto before = pattern(2 * granule(), 3);
  write(range, before);
  int descriptor = -1;
  const Status shared = backend().shareMapping(range, 2 * granule(), &descriptor);
  if (shared == Status::NotSupported) GTEST_SKIP() << "the device cannot share memory between processes";
  ASSERT_EQ(shared, Status::Success);
  ASSERT_GE(descriptor, 0);
  EXPECT_EQ(read(range, before.size()), before) << "sharing keeps the bytes";
  EXPECT_EQ(backend().shareMapping(range + granule(), granule(), &descriptor), Status::InvalidValue)
      << "only a whole mapping is shared";
  int again = -1;
  ASSERT_EQ(backend().shareMapping(range, 2 * granule(), &again), Status::Success) << "sharing twice gives it again";
  ::close(again);

  const DevicePtr other = reserve(2);
  const std::size_t freeBefore = backend().freeMemory();
  ASSERT_EQ(backend().mapShared(other, 2 * granule(), descriptor), Status::Success);
  ::close(descriptor); // the mapping keeps the memory
  track(other, 2 * granule());
  EXPECT_GE(backend().freeMemory() + granule(), freeBefore) << "mapped again, the memory is not counted twice";
  EXPECT_EQ(read(other, before.size()), before);
  const auto written = pattern(3000, 4);
  write(other + granule() - 1000, written);
  auto expected = before;
  std::copy(written.begin(), written.end(), expected.begin() + static_cast<std::ptrdiff_t>(granule() - 1000));
  EXPECT_EQ(read(range, expected.size()), expected) << "a write through either mapping is seen through the other";
  EXPECT_EQ(backend().unmap(range, 2 * granule()), Status::Success);
  forget(range);
  EXPECT_EQ(read(other, expected.size()), expected) << "the memory lives while any mapping has it";
}

// Host blocks lent to another process (a node's pool): the importer's
// blocks are the same memory, for the CPU and for the device mapped under a
// range, and live on once the descriptors are closed.
TEST_P(BackendConformance, ALentHostBlockIsTheSameMemoryWhereImported) {
  std::vector<HostBlock> blocks;
  const Status created = backend().createLendableHostBlocks(granule(), 2, &blocks);
  if (created == Status::NotSupported) GTEST_SKIP() << "the device cannot lend host memory between processes";
  ASSERT_EQ(created, Status::Success);
  ASSERT_EQ(blocks.size(), 2u);
  std::vector<LentHostBlock> lent(2);
  for (std::size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(backend().exportHostBlock(blocks[k], &lent[k]), Status::Success);
    EXPECT_GE(lent[k].descriptor, 0);
    EXPECT_EQ(lent[k].bytes, granule());
  }
  std::vector<HostBlock> imported;
  ASSERT_EQ(backend().importHostBlocks(lent, &imported), Status::Success);
  for (const LentHostBlock& block : lent)
    ::close(block.descriptor);
  ASSERT_EQ(imported.size(), 2u);
  const auto data = pattern(granule(), 11);
  std::memcpy(blocks[1].host, data.data(), data.size());
  EXPECT_EQ(std::memcmp(imported[1].host, data.data(), data.size()), 0) << "the lender's write is seen";
  imported[0].host[5] = std::byte{0x5a};
  EXPECT_EQ(blocks[0].host[5], std::byte{0x5a}) << "the importer's write is seen";
  const DevicePtr range = reserve(1);
  ASSERT_EQ(backend().mapHost(range, imported[1]), Status::Success);
  EXPECT_EQ(read(range, data.size()), data) << "the device reads the lent block under a range";
  EXPECT_EQ(backend().unmap(range, granule()), Status::Success);
  backend().destroyHostBlocks(blocks);
  EXPECT_EQ(imported[1].host[7], static_cast<std::byte>(data[7])) << "the import keeps the memory";
  backend().destroyHostBlocks(imported);
  const LentHostBlock closed{-1, 0, granule()};
  std::vector<HostBlock> none;
  EXPECT_NE(backend().importHostBlocks({&closed, 1}, &none), Status::Success);
}

// A run of adjacent mappings shared as one: one descriptor for the whole
// range (the program's own VMM handle, cuMemExportToShareableHandle), each
// mapping still unmapped on its own.
TEST_P(BackendConformance, AdjacentMappingsShareAsOneAllocation) {
  const DevicePtr range = reserve(3);
  for (std::size_t k = 0; k < 3; ++k)
    ASSERT_EQ(map(range + k * granule(), granule()), Status::Success);
  const auto before = pattern(3 * granule(), 5);
  write(range, before);
  int descriptor = -1;
  const Status shared = backend().shareMapping(range, 3 * granule(), &descriptor);
  if (shared == Status::NotSupported) GTEST_SKIP() << "the device cannot share memory between processes";
  ASSERT_EQ(shared, Status::Success);
  EXPECT_EQ(read(range, before.size()), before) << "sharing keeps the bytes";
  int again = -1;
  ASSERT_EQ(backend().shareMapping(range, 3 * granule(), &again), Status::Success);
  ::close(again);
  const DevicePtr other = reserve(3);
  ASSERT_EQ(backend().mapShared(other, 3 * granule(), descriptor), Status::Success);
  ::close(descriptor);
  track(other, 3 * granule());
  EXPECT_EQ(read(other, before.size()), before) << "one descriptor holds the whole range";
  EXPECT_EQ(backend().unmap(range + granule(), granule()), Status::Success) << "each mapping unmaps on its own";
  forget(range + granule());
  EXPECT_EQ(read(other + granule(), granule()),
            std::vector<unsigned char>(before.begin() + granule(), before.begin() + 2 * granule()));
}

} // namespace
} // namespace mqx::device::conformance
