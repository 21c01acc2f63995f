#include "ipc/manager_on_node.hpp"

#include <chrono>

#include "ipc/borrowed_host_blocks.hpp"
#include "ipc/manager_activity.hpp"
#include "ipc/shared_device_budget.hpp"

namespace mqx::ipc {
namespace {

// How long serving another process's eviction request waits for this
// process's manager lock before answering with nothing (docs/daemon.md).
constexpr std::chrono::milliseconds kEvictionPatience{200};
// How long one borrow from mqxd's pool of host blocks may take: it runs
// under the manager's lock while an eviction waits, and creating the blocks
// here instead takes about 15 ms per 64 MiB.
constexpr std::chrono::milliseconds kBorrowPatience{250};

} // namespace

ManagerOnNode::ManagerOnNode(const ManagerOptions& options, device::DeviceBackend& backend,
                             std::shared_ptr<NodeMembership> membership, std::shared_ptr<AdmissionClient> queryDemand)
    : membership_(std::move(membership)) {
  std::shared_ptr<DeviceBudget> budget;
  std::shared_ptr<HostBlockSource> lender;
  if (membership_ != nullptr) {
    budget = std::make_shared<SharedDeviceBudget>(membership_, std::move(queryDemand));
    if (options.borrowHostBlocks && !membership_->names().hostBlockPool.empty())
      lender = std::make_shared<BorrowedHostBlocks>(backend, membership_->names().hostBlockPool, kBorrowPatience);
  }
  manager_ = std::make_unique<MemoryManager>(options, backend, std::move(budget), std::move(lender));
  if (membership_ == nullptr) return;
  membership_->setEvictor([manager = manager_.get()](std::size_t bytes, std::uint64_t region) {
    return manager->evictForOtherProcess(bytes, kEvictionPatience, region);
  });
  membership_->setActivitySource(activitySourceOf(*manager_));
  attached_ = true;
}

ManagerOnNode::~ManagerOnNode() { detach(); }

void ManagerOnNode::detach() {
  if (!attached_) return;
  attached_ = false;
  membership_->setEvictor(nullptr);
  membership_->setActivitySource(nullptr); // publishes the last counters
}

} // namespace mqx::ipc
