// BorrowedHostBlocks: the swap buffer's HostBlockSource on a node whose
// mqxd keeps a pool of host blocks (host_block_lending.hpp): blocks are
// borrowed over the pool's socket and imported into this process
// (DeviceBackend::importHostBlocks), then given back and their imports
// destroyed when the swap buffer lets them go.
//
// Borrowing never stands in the way: without a pool, with blocks of another
// size, refused or unanswered, it stops asking for the rest of the process
// and the swap buffer creates its own blocks, as without mqxd. Only an
// empty pool is asked again (it refills as other processes end).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/host_block_source.hpp"
#include "device/device_backend.hpp"
#include "ipc/host_block_lending.hpp"

namespace mqx::ipc {

class BorrowedHostBlocks final : public HostBlockSource {
public:
  BorrowedHostBlocks(device::DeviceBackend& backend, std::string socketName, std::chrono::milliseconds timeout);
  ~BorrowedHostBlocks() override;

  [[nodiscard]] std::vector<device::HostBlock> take(std::size_t bytes, std::size_t count) override;
  void giveBack(const std::vector<device::HostBlock>& blocks) override;

  // Bytes borrowed in all, and held now.
  [[nodiscard]] std::uint64_t borrowedBytes() const;
  [[nodiscard]] std::uint64_t heldBytes() const;

private:
  void stopAsking(const std::string& why);

  device::DeviceBackend& backend_;
  HostBlockBorrower borrower_;
  mutable std::mutex mutex_;
  std::map<const std::byte*, std::uint64_t> ids_; // the lender's id of each held block, by its host address
  bool asking_ = true;
  std::uint64_t borrowedBytes_ = 0;
  std::uint64_t heldBytes_ = 0;
};

} // namespace mqx::ipc
