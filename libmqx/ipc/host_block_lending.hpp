// Host blocks lent by the node to its clients (docs/architecture.md, decision
// 2: a page that is not resident maps a host block).
//
// Creating pinned host memory is slow (cuMemCreate pins at 3.7-4.7 GB/s on
// the H100) and sits on the path of a process's first eviction; importing
// memory another process made, by descriptor, is not (33-36 GB/s:
// bench/results/host-pool-import-H100-7d94ba1.txt). So mqxd keeps a pool of
// blocks (HostBlockLender) and each client borrows from it (HostBlockBorrower)
// over an abstract unix socket: the kernel passes the blocks' descriptors
// (SCM_RIGHTS), and only a process of the same user is served (SO_PEERCRED),
// as for memory exports (memory_export.hpp).
//
// A block is lent to one connection at a time. It comes back when the
// borrower gives it back or when its connection closes (the process exited),
// and it is zeroed before it is lent again, so that no process sees another's
// bytes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/files.hpp"
#include "common/status.hpp"
#include "device/device_backend.hpp"

namespace mqx::ipc {

struct HostBlockLenderOptions {
  std::string socketName;     // an abstract unix socket's name (without the leading NUL)
  std::size_t blockBytes = 0; // each block's size: a multiple of the backend's granularity
  std::size_t blocks = 0;     // the pool's size
  // Blocks made before start() returns (0, or `blocks` or more: all of
  // them). The rest are made in the background, and only while no borrower
  // is connected: with mqxd making blocks beside a job that was paging, the
  // job's steps ran 0.2-0.35 s slower at 1.15x an H100 and 1.8-4.4 s slower
  // at 1.5x (bench/results/peers-matrix-auto-pool-H100-7f26159-r*.json,
  // peers-matrix-ready8-H100-83b09fd-r*.json), with the same evictions and
  // drains. Where the two meet (the driver is the likely place) is not
  // traced.
  std::size_t blocksAtStart = 0;
};

// The node's side (mqxd). Thread-safe.
class HostBlockLender {
public:
  HostBlockLender(device::HostBlockMaker& maker, HostBlockLenderOptions options);
  // Stops serving (within about 100 ms, also with borrowers connected) and
  // destroys the pool. Blocks that clients imported stay valid in them: the
  // memory lives as long as a process holds it.
  ~HostBlockLender();
  HostBlockLender(const HostBlockLender&) = delete;
  HostBlockLender& operator=(const HostBlockLender&) = delete;

  // Makes blocksAtStart blocks (in chunks: a failure part way keeps what
  // was made), then listens, and makes the rest in the background. Fails,
  // with the reason in `error`, when no block could be made or the socket's
  // name is taken.
  [[nodiscard]] Status start(std::string* error);

  [[nodiscard]] std::size_t blocks() const;     // in the pool now
  [[nodiscard]] std::size_t freeBlocks() const; // not lent (zeroed or waiting to be)
  [[nodiscard]] std::size_t lentBlocks() const;
  // The lender's own view of block `id`, empty for an unknown id: for
  // checks and statistics. Never written through while the block is lent.
  [[nodiscard]] std::span<const std::byte> view(std::uint64_t id) const;

private:
  class Pool;
  std::unique_ptr<Pool> pool_;
};

// One borrowed block: its id at the lender (for giveBack) and what
// DeviceBackend::importHostBlocks takes. The descriptor is the caller's to
// close (closeDescriptors), once imported: importHostBlocks keeps what it
// needs.
struct BorrowedHostBlock {
  std::uint64_t id = 0;
  device::LentHostBlock lent;
};

// Closes the blocks' descriptors (and marks them closed). The blocks stay
// borrowed: only giveBack or the borrower's end returns them.
void closeDescriptors(std::span<BorrowedHostBlock> blocks);

// A client's side (libmqx). One connection, opened on first use and kept:
// its closing (this object's end, or the process's) returns every block
// still borrowed, so destroy the borrower only after those blocks' imports.
// Thread-safe; every wait of a call is bounded by `timeout` in all.
class HostBlockBorrower {
public:
  HostBlockBorrower(std::string socketName, std::chrono::milliseconds timeout);
  ~HostBlockBorrower();
  HostBlockBorrower(const HostBlockBorrower&) = delete;
  HostBlockBorrower& operator=(const HostBlockBorrower&) = delete;

  // Up to `count` blocks of `blockBytes` into `out` (fewer when the pool has
  // fewer free). Else, with the reason in lastError():
  //   NotSupported  no lender listens (at once, without waiting): make blocks here
  //   OutOfMemory   the pool has no free block
  //   InvalidValue  the pool's blocks are of another size (lastError says which)
  //   NotPermitted  the socket belongs to another user
  //   Timeout       the lender did not answer in time (lastError says to what)
  //   Unknown       the connection broke
  [[nodiscard]] Status borrow(std::size_t blockBytes, std::size_t count, std::vector<BorrowedHostBlock>* out);
  // Returns blocks the caller no longer uses (their imports destroyed). Ids
  // not borrowed on the current connection are ignored.
  void giveBack(std::span<const std::uint64_t> ids);

  [[nodiscard]] std::string lastError() const;
  [[nodiscard]] std::size_t borrowedBlocks() const;

private:
  using Deadline = std::chrono::steady_clock::time_point;
  [[nodiscard]] Status connectLocked(Deadline deadline);
  [[nodiscard]] Status sendLocked(const void* message, std::size_t bytes, Deadline deadline, const std::string& what);
  [[nodiscard]] Status waitLocked(short events, Deadline deadline, const std::string& what);
  [[nodiscard]] Status exchangeLocked(std::uint64_t blockBytes, std::uint32_t count, Deadline deadline,
                                      std::vector<BorrowedHostBlock>* out);
  // Return requests for `ids`, whether held or not (late answers' blocks).
  void sendReturnsLocked(std::span<const std::uint64_t> ids, Deadline deadline);
  void disconnectLocked();
  Status fail(Status status, std::string message);

  const std::string socketName_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  FileDescriptor connection_;
  pid_t connectedFor_ = 0;                 // the process that connected (a forked child opens its own)
  std::uint64_t sequence_ = 0;             // of the last borrow: answers to older ones are given back
  std::unordered_set<std::uint64_t> held_; // borrowed on this connection, not given back
  std::string lastError_;
};

} // namespace mqx::ipc
