#include "ipc/shared_device_budget.hpp"

#include <unistd.h>

#include <algorithm>

#include "ipc/admission_client.hpp"
#include "ipc/client_records.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::ipc {
namespace {

// This process's record, or null once it left the node (or in a forked child,
// which inherits the parent's client but not its right to the record).
const ClientRecord* ownRecord(NodeMembership& membership) {
  const ClientRecord* record = ClientRecords(membership.node()).ownedBy(membership.slot(), getpid());
  return record != nullptr && record->state == ClientState::Memory ? record : nullptr;
}

// `onNode()`, unless the node is lost (or found lost by it: its lock is no
// mutex, or its holder is stopped), then `alone()`: a damaged node is a node
// lost, not a query lost.
template <typename OnNode, typename Alone>
auto onNodeOr(NodeMembership& membership, OnNode&& onNode, Alone&& alone) -> decltype(alone()) {
  if (!membership.lost()) {
    try {
      return onNode();
    } catch (const NodeLockUnusable& error) {
      membership.loseNode(error);
    }
  }
  return alone();
}

} // namespace

SharedDeviceBudget::SharedDeviceBudget(std::shared_ptr<NodeMembership> membership,
                                       std::shared_ptr<AdmissionClient> queryDemand)
    : membership_(std::move(membership)), queryDemand_(std::move(queryDemand)),
      limitAlone_(membership_->node().capacityOf(membership_->device())) {}

SharedDeviceBudget::~SharedDeviceBudget() = default;

bool SharedDeviceBudget::tryAcquire(std::size_t bytes) {
  const bool taken = onNodeOr(
      *membership_,
      [&] {
        // Each acquisition checks the segment first (its size, then its
        // header): a shrunk one is left, not touched (SIGBUS).
        if (!membership_->checkNode()) throw NodeLockUnusable("the segment is damaged");
        NodeState& node = membership_->node();
        RobustLock lock(node.lock);
        return ClientRecords(node).acquireBudget(membership_->slot(), getpid(), bytes);
      },
      [&] { return heldAlone_.load() + bytes <= limitAlone_; });
  if (taken) heldAlone_ += bytes;
  return taken;
}

void SharedDeviceBudget::release(std::size_t bytes) {
  heldAlone_ -= std::min<std::uint64_t>(bytes, heldAlone_.load());
  onNodeOr(
      *membership_,
      [&] {
        NodeState& node = membership_->node();
        RobustLock lock(node.lock);
        ClientRecords(node).releaseBudget(membership_->slot(), getpid(), bytes);
      },
      [] {});
}

std::size_t SharedDeviceBudget::used() const {
  return onNodeOr(
      *membership_,
      [&]() -> std::size_t {
        NodeState& node = membership_->node();
        RobustLock lock(node.lock);
        return node.usedBytes(membership_->device());
      },
      [&]() -> std::size_t { return heldAlone_.load(); });
}

std::size_t SharedDeviceBudget::limit() const { return limitAlone_; }

std::size_t SharedDeviceBudget::held() const {
  return onNodeOr(
      *membership_,
      [&]() -> std::size_t {
        NodeState& node = membership_->node();
        RobustLock lock(node.lock);
        const ClientRecord* record = ownRecord(*membership_);
        return record != nullptr ? record->budgetHeld : 0;
      },
      [&]() -> std::size_t { return heldAlone_.load(); });
}

std::size_t SharedDeviceBudget::heldElsewhere() const {
  return onNodeOr(
      *membership_,
      [&]() -> std::size_t {
        NodeState& node = membership_->node();
        RobustLock lock(node.lock); // one lock: the two reads agree
        const ClientRecord* record = ownRecord(*membership_);
        const std::size_t used = node.usedBytes(membership_->device());
        const std::size_t held = record != nullptr ? record->budgetHeld : 0;
        return used > held ? used - held : 0;
      },
      []() -> std::size_t { return 0; }); // a node lost: this process runs alone
}

bool SharedDeviceBudget::reclaimElsewhere(std::size_t bytes) { return reclaim(bytes) == PeerReclaim::Freed; }

} // namespace mqx::ipc

namespace mqx::ipc {

std::uint64_t SharedDeviceBudget::tick() {
  // Per launch: the lost flag only (the heartbeat and every acquisition check the segment itself).
  if (membership_->lost()) return ++clockAlone_;
  return membership_->node().logicalClock.fetch_add(1, std::memory_order_relaxed) + 1;
}

void SharedDeviceBudget::publish(std::span<const PublishedInputs> regions) {
  // One ownership check (a getpid() system call) per launch, not per region.
  if (membership_->lost() || ownRecord(*membership_) == nullptr) return; // left the node (or a fork() child)
  if (!entriesInitialised_) {
    for (std::uint32_t i = kPublishedRegionsPerClient; i > 0; --i)
      freeEntries_.push_back(i - 1);
    entriesInitialised_ = true;
  }
  PublishedRegions& table = membership_->node().published[membership_->slot()];
  for (const PublishedInputs& published : regions) {
    const EvictionCandidate& inputs = published.inputs;
    auto found = entryOf_.find(published.region);
    if (inputs.bytes == 0) { // nothing resident: withdrawn
      if (found == entryOf_.end()) continue;
      table.entries[found->second].write({});
      freeEntries_.push_back(found->second);
      entryOf_.erase(found);
      continue;
    }
    if (found == entryOf_.end()) {
      // A full table leaves the region unpublished: only its owner's own
      // victim selection sees it (docs/daemon.md).
      if (freeEntries_.empty()) continue;
      found = entryOf_.emplace(published.region, freeEntries_.back()).first;
      freeEntries_.pop_back();
    }
    table.entries[found->second].write(
        {published.region, inputs.bytes, inputs.dirtyBytes, inputs.lastUse, inputs.useCount});
  }
}

void SharedDeviceBudget::collect(std::vector<PeerCandidate>* out) {
  onNodeOr(
      *membership_, [&] { collectOnNode(out); }, [] {});
}

void SharedDeviceBudget::collectOnNode(std::vector<PeerCandidate>* out) {
  if (!membership_->checkNode()) return;
  NodeState& node = membership_->node();
  std::vector<std::pair<std::uint32_t, pid_t>> others;
  {
    RobustLock lock(node.lock);
    // Global victim selection among the processes of this device only: a
    // region evicted on another device frees nothing of this budget.
    for (std::uint32_t slot = 0; slot < kMaxClients; ++slot) {
      const ClientRecord& record = node.clients[slot];
      if (slot != membership_->slot() && record.state == ClientState::Memory && record.device == membership_->device())
        others.emplace_back(slot, record.pid);
    }
  }
  for (const auto& [slot, pid] : others) {
    if (!processAlive(pid)) continue; // cannot answer; mqxd reclaims its bytes
    for (const PublishedRegion& entry : node.published[slot].entries) {
      RegionSummary summary;
      if (!entry.read(&summary) || summary.residentBytes == 0) continue;
      out->push_back(
          {slot, summary.region,
           EvictionCandidate{0, summary.residentBytes, summary.dirtyBytes, summary.lastUse, summary.useCount}});
    }
  }
}

std::size_t SharedDeviceBudget::evictAt(const PeerCandidate& candidate, std::size_t bytes) {
  return onNodeOr(
      *membership_, [&] { return membership_->requestEvictionOf(candidate.owner, candidate.region, bytes); },
      [] { return std::size_t{0}; });
}

void SharedDeviceBudget::observeLaunchFootprint(std::size_t bytes) {
  if (queryDemand_ != nullptr)
    onNodeOr(
        *membership_, [&] { queryDemand_->observeLaunchFootprint(bytes); }, [] {});
}

bool SharedDeviceBudget::mustYield() {
  return onNodeOr(
      *membership_, [&] { return membership_->mustYield(); }, [] { return false; });
}

PeerReclaim SharedDeviceBudget::reclaim(std::size_t bytes) {
  return onNodeOr(
      *membership_, [&] { return membership_->requestEviction(bytes); }, [] { return PeerReclaim::NobodyElseHolds; });
}

std::uint64_t SharedDeviceBudget::progress() {
  return onNodeOr(
      *membership_, [&] { return membership_->progress(); }, [] { return std::uint64_t{0}; });
}

std::string SharedDeviceBudget::describeNode() {
  return onNodeOr(
      *membership_, [&] { return membership_->describeNode(); }, [&] { return membership_->describeNode(); });
}

} // namespace mqx::ipc
