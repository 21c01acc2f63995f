// Device memory shared between processes (cuIpcGetMemHandle and
// cuIpcOpenMemHandle; docs/interposer.md, "Handles to other processes").
//
// A managed allocation is many physical allocations, one per page, so the
// driver's 64-byte IPC handle cannot name it. The exporter's
// MemoryExportServer keeps the descriptors of the pages' physical memory
// (MemoryManager::share) and hands them to an importer that connects to its
// abstract unix socket and shows the export's ticket: its id and a random
// token, carried in the handle (ExportTicket). The kernel passes the
// descriptors (SCM_RIGHTS); only a process of the same user is served
// (SO_PEERCRED), as the driver's own IPC needs the same user too.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/files.hpp"
#include "common/status.hpp"
#include "common/types.hpp"
#include "core/memory_manager.hpp"

namespace mqx::ipc {

// What an mqx IPC handle holds: whose export, which one, the token that
// proves the holder was given it, and the allocation's extent.
struct ExportTicket {
  static constexpr std::size_t kHandleBytes = 64; // CU_IPC_HANDLE_SIZE
  std::uint32_t exporter = 0;                     // the exporting process
  std::uint64_t id = 0;
  std::array<std::uint8_t, 16> token{};
  std::uint64_t size = 0;        // the bytes the program allocated
  std::uint64_t mappedBytes = 0; // the pieces' extent

  // Into and out of the handle's 64 bytes. decode: nullopt when the bytes
  // are not an mqx handle (a handle of the driver's own, say).
  void encode(std::byte* handle) const;
  static std::optional<ExportTicket> decode(const std::byte* handle);
};

class MemoryExportServer {
public:
  MemoryExportServer() = default;
  ~MemoryExportServer(); // stops serving; imports already made stay valid
  MemoryExportServer(const MemoryExportServer&) = delete;
  MemoryExportServer& operator=(const MemoryExportServer&) = delete;

  // Keeps the allocation's descriptors until withdraw(base) and returns its
  // ticket; starts serving on first use. An allocation offered again (its
  // base known) keeps its first ticket and descriptors. `error` says why
  // when the socket cannot be had.
  [[nodiscard]] Status offer(SharedAllocation allocation, ExportTicket* ticket, std::string* error);
  // The allocation at `base` was freed: its ticket serves nobody from now.
  void withdraw(DevicePtr base);

private:
  struct Export {
    ExportTicket ticket;
    SharedAllocation allocation;
  };
  [[nodiscard]] Status startLocked(std::string* error);
  void serve();
  void answer(int connection);

  std::mutex mutex_;
  std::map<DevicePtr, Export> exports_; // by base
  std::uint64_t nextId_ = 1;
  FileDescriptor listening_;
  FileDescriptor wake_;  // an eventfd that ends serve()
  pid_t servingFor_ = 0; // the process that started serving (a forked child starts its own)
  std::thread thread_;
};

// The importer's side: connects to the exporter the ticket names and receives
// the pieces (descriptors the caller owns), waiting at most `timeout` for
// each step. On failure, `error` says which step and for which process.
[[nodiscard]] Status receiveExport(const ExportTicket& ticket, std::chrono::milliseconds timeout,
                                   std::vector<SharedPiece>* pieces, std::string* error);

} // namespace mqx::ipc
