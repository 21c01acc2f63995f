// NodeHostBlockPool: the pinned host memory mqxd creates at start and lends
// to its clients as host blocks (daemon.host_block_pool; docs/daemon.md,
// "Lent host blocks"). Why: a client that evicts beyond the device maps a
// host block under every evicted page, and creating pinned memory on the
// eviction path runs at 3.7-4.7 GB/s on an H100, where importing a block
// created ahead of need runs at 33-36 GB/s
// (bench/results/host-pool-import-H100-7d94ba1.txt).
//
// The blocks are of memory.page_size (a client's pages map them whole), made
// by the node's own maker: on a GPU node host NUMA memory near device 0,
// exportable by POSIX descriptor and made with no CUDA context
// (ContextlessHostBlocks), on the simulated device shared-memory files.
// Lending itself is ipc::HostBlockLender's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "device/device_backend.hpp"
#include "ipc/host_block_lending.hpp"

namespace mqx::daemon {

class NodeHostBlockPool {
public:
  // The pool daemon.host_block_pool asks for, lent on `socketName`; null
  // when it is 0 (or "auto" on the simulated device), and null with a
  // warning when no block can be made (the clients then create their own,
  // as without a pool).
  static std::unique_ptr<NodeHostBlockPool> start(const Config& config, const std::string& socketName);
  ~NodeHostBlockPool();
  NodeHostBlockPool(const NodeHostBlockPool&) = delete;
  NodeHostBlockPool& operator=(const NodeHostBlockPool&) = delete;

  [[nodiscard]] const ipc::HostBlockLender& lender() const { return *lender_; }
  // One phrase for mqxd's start line.
  [[nodiscard]] std::string describe() const;

private:
  struct Backend; // the block maker and what it needs alive (the CUDA driver's entry points)
  // The node's backend for host memory: CUDA on a GPU node (backend.kind
  // cuda, or auto with a GPU in sight), else the simulated device's. Null,
  // with the reason in `why`, when it cannot be had.
  static std::unique_ptr<Backend> openBackend(const Config& config, bool gpu, std::string* why);
  // daemon.host_block_pool = "auto" on a GPU node.
  static std::size_t autoPoolBytes();
  NodeHostBlockPool(std::unique_ptr<Backend> backend, std::unique_ptr<ipc::HostBlockLender> lender,
                    std::size_t blockBytes, std::size_t mostBlocks);

  std::unique_ptr<Backend> backend_; // outlives the lender, whose blocks it made
  std::unique_ptr<ipc::HostBlockLender> lender_;
  std::size_t blockBytes_;
  std::size_t mostBlocks_;
};

} // namespace mqx::daemon
