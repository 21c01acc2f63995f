#include "ipc/borrowed_host_blocks.hpp"

#include "common/log.hpp"

namespace mqx::ipc {

BorrowedHostBlocks::BorrowedHostBlocks(device::DeviceBackend& backend, std::string socketName,
                                       std::chrono::milliseconds timeout)
    : backend_(backend), borrower_(std::move(socketName), timeout) {}

BorrowedHostBlocks::~BorrowedHostBlocks() {
  if (borrowedBytes_ != 0)
    log(LogLevel::Info, "host blocks: {} MiB borrowed from the node's pool in all", borrowedBytes_ >> 20);
}

void BorrowedHostBlocks::stopAsking(const std::string& why) {
  asking_ = false;
  log(LogLevel::Info, "host blocks: not borrowing from the node's pool ({}); creating them here", why);
}

std::vector<device::HostBlock> BorrowedHostBlocks::take(std::size_t bytes, std::size_t count) {
  std::lock_guard lock(mutex_);
  if (!asking_ || count == 0) return {};
  std::vector<BorrowedHostBlock> borrowed;
  const Status status = borrower_.borrow(bytes, count, &borrowed);
  if (status == Status::OutOfMemory) return {}; // the pool is empty for now: ask again next time
  if (!ok(status)) {
    stopAsking(borrower_.lastError());
    return {};
  }
  std::vector<device::LentHostBlock> lent;
  std::vector<std::uint64_t> ids;
  for (const BorrowedHostBlock& block : borrowed) {
    lent.push_back(block.lent);
    ids.push_back(block.id);
  }
  std::vector<device::HostBlock> blocks;
  const Status imported = backend_.importHostBlocks(lent, &blocks);
  closeDescriptors(borrowed); // the imports hold the memory
  if (!ok(imported)) {
    borrower_.giveBack(ids);
    stopAsking(fmt::format("importing them failed: {}", toString(imported)));
    return {};
  }
  for (std::size_t i = 0; i < blocks.size(); ++i)
    ids_[blocks[i].host] = ids[i];
  borrowedBytes_ += bytes * blocks.size();
  heldBytes_ += bytes * blocks.size();
  return blocks;
}

void BorrowedHostBlocks::giveBack(const std::vector<device::HostBlock>& blocks) {
  std::lock_guard lock(mutex_);
  std::vector<std::uint64_t> ids;
  for (const device::HostBlock& block : blocks) {
    auto it = ids_.find(block.host);
    if (it == ids_.end()) continue;
    ids.push_back(it->second);
    heldBytes_ -= block.bytes;
    ids_.erase(it);
  }
  backend_.destroyHostBlocks(blocks); // the import goes before the lender may lend the block again
  borrower_.giveBack(ids);
}

std::uint64_t BorrowedHostBlocks::borrowedBytes() const {
  std::lock_guard lock(mutex_);
  return borrowedBytes_;
}

std::uint64_t BorrowedHostBlocks::heldBytes() const {
  std::lock_guard lock(mutex_);
  return heldBytes_;
}

} // namespace mqx::ipc
