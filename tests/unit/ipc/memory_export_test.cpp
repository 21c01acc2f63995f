// Managed memory shared with another process (cuIpcGetMemHandle's mechanism,
// on the simulated device): MemoryManager::share, the export server, and a
// second process that receives the descriptors and maps them. Real
// processes and sockets; the simulated device's memory is shared-memory
// files, as the GPU's is exportable physical memory.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "ipc/memory_export.hpp"
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;

class MemoryExportTest : public ManagerTest {
protected:
  // The importer: a process of its own, with its own simulated device and
  // manager, as cuIpcOpenMemHandle runs in another program. It reads the
  // bytes through its mapping, checks them against `expected`, writes
  // `written` at `at`, closes, and exits 0 when all went as expected.
  static int importer(int fromParent, const std::vector<std::uint8_t>& expected, std::size_t at,
                      const std::vector<std::uint8_t>& written) {
    std::byte handle[ipc::ExportTicket::kHandleBytes];
    if (::read(fromParent, handle, sizeof handle) != static_cast<ssize_t>(sizeof handle)) return 10;
    const auto ticket = ipc::ExportTicket::decode(handle);
    if (!ticket) return 11;
    device::SimBackend backend(embedded::simBackendOptions(smallConfig()));
    MemoryManager manager(embedded::managerOptions(smallConfig()), backend);
    std::vector<SharedPiece> pieces;
    std::string error;
    if (!ok(ipc::receiveExport(*ticket, std::chrono::seconds(5), &pieces, &error))) return 12;
    DevicePtr address = 0;
    if (!ok(manager.openShared(pieces, ticket->mappedBytes, &address))) return 13;
    if (manager.isManaged(address)) return 14; // the exporter's memory, not a region here
    std::vector<std::uint8_t> seen(expected.size());
    const StreamHandle toHost = backend.transferStream(device::TransferDirection::ToHost);
    if (!ok(backend.copyToHost(seen.data(), address, seen.size(), toHost, false)) || !ok(backend.synchronize(toHost)))
      return 15;
    if (seen != expected) return 16;
    const StreamHandle toDevice = backend.transferStream(device::TransferDirection::ToDevice);
    if (!ok(backend.copyToDevice(address + at, written.data(), written.size(), toDevice, false)) ||
        !ok(backend.synchronize(toDevice)))
      return 17;
    if (!ok(manager.closeShared(address))) return 18;
    if (manager.closeShared(address) != Status::InvalidValue) return 19;
    return 0;
  }
};

TEST(ExportTicket, RoundTripsThroughTheHandleAndKnowsOnlyItsOwn) {
  ipc::ExportTicket ticket;
  ticket.exporter = 4242;
  ticket.id = 7;
  for (std::size_t i = 0; i < ticket.token.size(); ++i)
    ticket.token[i] = static_cast<std::uint8_t>(i * 13 + 1);
  ticket.size = 123456;
  ticket.mappedBytes = 2 << 20;
  std::byte handle[ipc::ExportTicket::kHandleBytes];
  ticket.encode(handle);
  const auto back = ipc::ExportTicket::decode(handle);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->exporter, ticket.exporter);
  EXPECT_EQ(back->id, ticket.id);
  EXPECT_EQ(back->token, ticket.token);
  EXPECT_EQ(back->size, ticket.size);
  EXPECT_EQ(back->mappedBytes, ticket.mappedBytes);
  std::byte driverHandle[ipc::ExportTicket::kHandleBytes] = {};
  driverHandle[0] = std::byte{0x5a};
  EXPECT_FALSE(ipc::ExportTicket::decode(driverHandle).has_value()) << "a handle of the driver's own passes through";
}

TEST_F(MemoryExportTest, AnotherProcessSeesTheBytesAndWritesThemWhileEvictionRunsAroundThem) {
  // The node: 16 pages of 64 KiB. The shared allocation is 3 pages, written
  // lazily (its bytes still on the host) before it is shared, then partly
  // again after: that write must reach the device at once.
  const std::size_t bytes = 3 * 64 * KiB - 100;
  auto data = pattern(bytes, 5);
  const auto later = pattern(64 * KiB, 77); // a whole page: lazy, were the region not shared
  const auto fromImporter = pattern(20 * KiB, 123);
  const std::size_t laterAt = 64 * KiB, importerAt = 100 * KiB;
  auto seenByImporter = data;
  std::memcpy(seenByImporter.data() + laterAt, later.data(), later.size());

  int toChild[2];
  ASSERT_EQ(::pipe(toChild), 0);
  const pid_t child = ::fork(); // before any thread of the export server
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(toChild[1]);
    ::_exit(importer(toChild[0], seenByImporter, importerAt, fromImporter));
  }
  ::close(toChild[0]);

  DevicePtr region = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(region, data.data(), bytes, 0, true), Status::Success);
  EXPECT_EQ(manager_->statistics().bytesToDevice, 0u) << "lazy before sharing";
  SharedAllocation shared;
  ASSERT_EQ(manager_->share(region + 5000, &shared), Status::Success) << "any address inside shares the allocation";
  EXPECT_EQ(shared.base, region);
  EXPECT_EQ(shared.size, bytes);
  ASSERT_EQ(shared.pieces.size(), 3u);
  EXPECT_GE(manager_->statistics().bytesToDevice, bytes) << "every page resident once shared";
  ASSERT_EQ(manager_->copyHostToDevice(region + laterAt, later.data(), later.size(), 0, true), Status::Success);

  ipc::MemoryExportServer server;
  ipc::ExportTicket ticket;
  std::string error;
  ASSERT_EQ(server.offer(std::move(shared), &ticket, &error), Status::Success) << error;
  std::byte handle[ipc::ExportTicket::kHandleBytes];
  ticket.encode(handle);
  ASSERT_EQ(::write(toChild[1], handle, sizeof handle), static_cast<ssize_t>(sizeof handle));
  ::close(toChild[1]);

  // Meanwhile the rest of the node's memory is used three times over: the
  // shared pages never leave the device.
  std::vector<DevicePtr> others;
  for (int i = 0; i < 12; ++i) {
    others.push_back(allocate(4 * 64 * KiB));
    const auto filler = pattern(4 * 64 * KiB, static_cast<std::uint8_t>(i));
    ASSERT_EQ(manager_->copyHostToDevice(others.back(), filler.data(), filler.size(), 0, true), Status::Success);
    ASSERT_EQ(transform(others.back(), others.back(), filler.size(), 1), Status::Success);
  }
  ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  EXPECT_GT(manager_->statistics().evictions, 0u);

  int status = -1;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the importer's step that failed (importer() says which)";

  auto expected = seenByImporter;
  std::memcpy(expected.data() + importerAt, fromImporter.data(), fromImporter.size());
  EXPECT_EQ(read(region, bytes), expected) << "the importer's writes are in the exporter's memory";
  // Still resident and counted: a launch on it loads nothing.
  const std::uint64_t loadedBefore = manager_->statistics().bytesToDevice;
  ASSERT_EQ(transform(region, region, bytes, 2), Status::Success);
  ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  EXPECT_EQ(manager_->statistics().bytesToDevice, loadedBefore);
  server.withdraw(region);
  EXPECT_EQ(manager_->free(region), Status::Success);
}

TEST_F(MemoryExportTest, AWrongTokenAFreedExportAndAGoneExporterAreRefusedWithTheReason) {
  DevicePtr region = allocate(64 * KiB);
  SharedAllocation shared;
  ASSERT_EQ(manager_->share(region, &shared), Status::Success);
  ipc::MemoryExportServer server;
  ipc::ExportTicket ticket;
  std::string error;
  ASSERT_EQ(server.offer(std::move(shared), &ticket, &error), Status::Success) << error;

  std::vector<SharedPiece> pieces;
  auto forged = ticket;
  forged.token[0] ^= 1;
  EXPECT_EQ(ipc::receiveExport(forged, std::chrono::seconds(2), &pieces, &error), Status::InvalidValue);
  EXPECT_NE(error.find("no export"), std::string::npos) << error;
  ASSERT_EQ(ipc::receiveExport(ticket, std::chrono::seconds(2), &pieces, &error), Status::Success) << error;
  EXPECT_EQ(pieces.size(), 1u);

  server.withdraw(region);
  EXPECT_EQ(ipc::receiveExport(ticket, std::chrono::seconds(2), &pieces, &error), Status::InvalidValue);
  EXPECT_NE(error.find("no export"), std::string::npos) << error;

  auto elsewhere = ticket;
  elsewhere.exporter = 0x7ffffff0; // no such process serves
  EXPECT_EQ(ipc::receiveExport(elsewhere, std::chrono::seconds(2), &pieces, &error), Status::InvalidValue);
  EXPECT_NE(error.find("serves no exports"), std::string::npos) << error;
}

// cuMemExportToShareableHandle of the program's own VMM allocation: one
// descriptor for the whole handle, of one page or of several (their pages
// moved onto one shareable allocation), its bytes there.
TEST_F(MemoryExportTest, AProgramsOwnAllocationSharesAsOnePieceWhateverItsPages) {
  DevicePtr range = 0;
  ASSERT_EQ(backend_->reserve(4 * 64 * KiB, &range), Status::Success);
  ASSERT_EQ(manager_->adopt(range, 64 * KiB), Status::Success);
  ASSERT_EQ(manager_->adopt(range + 64 * KiB, 3 * 64 * KiB), Status::Success);
  const auto data = pattern(4 * 64 * KiB, 31);
  ASSERT_EQ(manager_->copyHostToDevice(range, data.data(), 64 * KiB, 0, true), Status::Success);
  ASSERT_EQ(manager_->copyHostToDevice(range + 64 * KiB, data.data() + 64 * KiB, 3 * 64 * KiB, 0, true),
            Status::Success);
  for (const DevicePtr base : {range, range + 64 * KiB}) {
    const std::size_t bytes = base == range ? 64 * KiB : 3 * 64 * KiB;
    SharedAllocation shared;
    ASSERT_EQ(manager_->share(base, &shared), Status::Success);
    ASSERT_EQ(shared.pieces.size(), 1u);
    EXPECT_EQ(shared.pieces[0].bytes, bytes);
    DevicePtr second = 0;
    ASSERT_EQ(manager_->openShared(shared.pieces, shared.mappedBytes, &second), Status::Success);
    std::vector<std::uint8_t> seen(bytes);
    const StreamHandle toHost = backend_->transferStream(device::TransferDirection::ToHost);
    ASSERT_EQ(backend_->copyToHost(seen.data(), second, seen.size(), toHost, false), Status::Success);
    ASSERT_EQ(backend_->synchronize(toHost), Status::Success);
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), data.begin() + static_cast<std::ptrdiff_t>(base - range)));
    EXPECT_EQ(manager_->closeShared(second), Status::Success);
    SharedAllocation again;
    ASSERT_EQ(manager_->share(base, &again), Status::Success) << "shared again: the same one allocation";
    EXPECT_EQ(again.pieces.size(), 1u);
  }
  EXPECT_EQ(read(range, 64 * KiB), std::vector<std::uint8_t>(data.begin(), data.begin() + 64 * KiB));
  EXPECT_EQ(read(range + 64 * KiB, 3 * 64 * KiB), std::vector<std::uint8_t>(data.begin() + 64 * KiB, data.end()));
  EXPECT_EQ(manager_->free(range), Status::Success);
  EXPECT_EQ(manager_->free(range + 64 * KiB), Status::Success);
  EXPECT_EQ(backend_->release(range, 4 * 64 * KiB), Status::Success);
}

// cuMemMap of the program's handle at a second address while it is mapped:
// the same bytes at both, both ways, and each unmapped on its own (the
// second address's range stays the program's).
TEST_F(MemoryExportTest, AProgramsAllocationMappedAtASecondAddressIsTheSameBytes) {
  constexpr std::size_t bytes = 3 * 64 * KiB;
  DevicePtr first = 0, second = 0;
  ASSERT_EQ(backend_->reserve(bytes, &first), Status::Success);
  ASSERT_EQ(backend_->reserve(bytes, &second), Status::Success);
  ASSERT_EQ(manager_->adopt(first, bytes), Status::Success);
  const auto data = pattern(bytes, 17);
  ASSERT_EQ(manager_->copyHostToDevice(first, data.data(), bytes, 0, true), Status::Success);
  SharedAllocation shared;
  ASSERT_EQ(manager_->share(first, &shared), Status::Success);
  ASSERT_EQ(shared.pieces.size(), 1u) << "the program's handle shares as one allocation";
  ASSERT_EQ(manager_->openSharedAt(second, shared.pieces, shared.mappedBytes), Status::Success);
  std::vector<std::uint8_t> seen(bytes);
  const StreamHandle toHost = backend_->transferStream(device::TransferDirection::ToHost);
  ASSERT_EQ(backend_->copyToHost(seen.data(), second, bytes, toHost, false), Status::Success);
  ASSERT_EQ(backend_->synchronize(toHost), Status::Success);
  EXPECT_EQ(seen, data);
  const auto written = pattern(64 * KiB, 99);
  const StreamHandle toDevice = backend_->transferStream(device::TransferDirection::ToDevice);
  ASSERT_EQ(backend_->copyToDevice(second + 64 * KiB, written.data(), written.size(), toDevice, false),
            Status::Success);
  ASSERT_EQ(backend_->synchronize(toDevice), Status::Success);
  auto expected = data;
  std::memcpy(expected.data() + 64 * KiB, written.data(), written.size());
  EXPECT_EQ(read(first, bytes), expected);
  EXPECT_EQ(manager_->closeShared(second), Status::Success);
  EXPECT_EQ(backend_->map(second, 64 * KiB), Status::Success) << "the second range is the program's again";
  EXPECT_EQ(backend_->unmap(second, 64 * KiB), Status::Success);
  EXPECT_EQ(manager_->free(first), Status::Success);
  EXPECT_EQ(backend_->release(first, bytes), Status::Success);
  EXPECT_EQ(backend_->release(second, bytes), Status::Success);
}

TEST_F(MemoryExportTest, AnAllocationLargerThanTheBudgetIsNotSharedAndStaysUsable) {
  const std::size_t bytes = 20 * 64 * KiB; // the device holds 16 pages
  DevicePtr region = allocate(bytes);
  const auto data = pattern(bytes, 9);
  ASSERT_EQ(manager_->copyHostToDevice(region, data.data(), bytes, 0, true), Status::Success);
  SharedAllocation shared;
  EXPECT_EQ(manager_->share(region, &shared), Status::OutOfMemory);
  EXPECT_TRUE(shared.pieces.empty());
  EXPECT_EQ(read(region, bytes), data);
}

} // namespace
} // namespace mqx::test
