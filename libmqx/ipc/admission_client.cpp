#include "ipc/admission_client.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "ipc/client_records.hpp"
#include "ipc/messages.hpp"
#include "ipc/node_snapshot.hpp"

namespace mqx::ipc {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The node's lock, waited for at most `timeout` when one is given
// (AdmissionOptions::nodeLockTimeout).
class BoundedNodeLock {
public:
  BoundedNodeLock(NodeState& node, std::optional<milliseconds> timeout) : mutex_(node.lock) {
    if (!timeout) {
      mutex_.lock();
      held_ = true;
      return;
    }
    const RobustMutex::TimedLock taken = mutex_.lockWithin(*timeout);
    held_ = taken == RobustMutex::TimedLock::Taken || taken == RobustMutex::TimedLock::TakenFromDeadOwner;
  }
  ~BoundedNodeLock() {
    if (held_) mutex_.unlock();
  }
  BoundedNodeLock(const BoundedNodeLock&) = delete;
  BoundedNodeLock& operator=(const BoundedNodeLock&) = delete;
  bool held() const { return held_; }

private:
  RobustMutex& mutex_;
  bool held_ = false;
};

} // namespace

std::shared_ptr<AdmissionClient> AdmissionClient::connect(const NodeOptions& node, const AdmissionOptions& options,
                                                          const std::string& name) {
  auto membership = NodeMembership::connect(node, NodeMembership::Role::Query, name);
  if (membership == nullptr) return nullptr;
  return std::make_shared<AdmissionClient>(std::move(membership), options);
}

bool AdmissionClient::declareDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand) {
  NodeMembership& member = *membership_;
  if (member.slot() == kNoSlot || !member.inJoiningProcess()) return false;
  BoundedNodeLock lock(member.node(), options_.nodeLockTimeout);
  if (!lock.held()) return false;
  return ClientRecords(member.node()).declareDemand(member.slot(), getpid(), weightedDemand, peakDemand);
}

bool AdmissionClient::waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand) {
  return waitForAdmission(weightedDemand, peakDemand, AdmissionWait{}) == Admission::Admitted;
}

std::string AdmissionClient::admissionWaitReason() {
  NodeSnapshot snapshot;
  {
    RobustLock lock(membership_->node().lock);
    snapshot = snapshotOf(membership_->node());
  }
  return describeAdmissionWait(snapshot, membership_->slot(), options_.admission, options_.admissionFixN);
}

AdmissionClient::Admission AdmissionClient::waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand,
                                                             const AdmissionWait& wait) {
  NodeMembership& member = *membership_;
  NodeState& node = member.node();
  const std::uint32_t slot = member.slot();
  if (slot == kNoSlot) return Admission::Reclaimed; // left the node already
  {
    BoundedNodeLock lock(node, options_.nodeLockTimeout);
    if (!lock.held()) return Admission::NodeLocked;
    if (!ClientRecords(node).requestAdmission(slot, getpid(), weightedDemand, peakDemand)) return Admission::Reclaimed;
  }
  Message request = Message::of(MessageKind::AdmissionRequest, getpid(), slot);
  request.weightedDemand = weightedDemand;
  request.peakDemand = peakDemand;
  // A full queue (mqxd busy or stopped) loses only the message: mqxd admits
  // from the Waiting record, which it reads on every pass (tests/faults).
  if (!sendTo(member.names().daemonQueue, request) && !member.daemonAlive()) return Admission::DaemonGone;
  const auto start = Clock::now();
  auto nextReport = start + milliseconds(200);
  auto lastReport = Clock::time_point{};
  std::string lastReason;
  Message reply;
  for (;;) {
    // The record is the truth: the Admitted message may have been lost, or
    // mqxd admitted the query before it asked.
    const auto now = Clock::now();
    {
      BoundedNodeLock lock(node, options_.nodeLockTimeout);
      if (!lock.held()) return Admission::NodeLocked;
      ClientRecords records(node);
      if (!records.beat(slot, getpid())) return Admission::Reclaimed;
      if (records[slot].state == ClientState::Running) return Admission::Admitted;
      if (!processAlive(node.daemonPid)) return Admission::DaemonGone;
      if (wait.timeout && now - start >= *wait.timeout) {
        // Withdrawn under the lock: mqxd admits only records that ask.
        records.withdrawAdmissionRequest(slot, getpid());
        return Admission::TimedOut;
      }
    }
    if (wait.poll && !wait.poll()) return Admission::Stopped;
    if (wait.report && now >= nextReport) {
      nextReport = now + wait.reportInterval;
      std::string reason = admissionWaitReason();
      // Every interval for the first 12 of them; then an unchanged reason
      // only every 12 intervals (a query may wait for hours).
      if (reason != lastReason || now - start < 12 * wait.reportInterval ||
          now - lastReport >= 12 * wait.reportInterval) {
        lastReport = now;
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
        wait.report(fmt::format(
            "{}; waited {} s{}", reason, waited,
            wait.timeout
                ? fmt::format(" of at most {} s", std::chrono::ceil<std::chrono::seconds>(*wait.timeout).count())
                : std::string(" (no time limit)")));
        lastReason = std::move(reason);
      }
    }
    // Until the next check: the poll interval, or what is left of the
    // timeout when that is sooner.
    auto slice = wait.pollInterval;
    if (wait.timeout)
      slice = std::clamp(std::chrono::ceil<milliseconds>(start + *wait.timeout - Clock::now()), milliseconds(1), slice);
    while (member.replies().receive(&reply, slice))
      if (reply.kind == MessageKind::Admitted && reply.slot == slot) return Admission::Admitted;
  }
}

std::uint64_t AdmissionClient::observedPeak() {
  NodeMembership& member = *membership_;
  if (member.slot() == kNoSlot) return 0;
  RobustLock lock(member.node().lock);
  return member.node().clients[member.slot()].observedPeak;
}

std::optional<AdmissionClient::PlacedDevice> AdmissionClient::placedDevice() {
  NodeMembership& member = *membership_;
  if (member.slot() == kNoSlot) return std::nullopt;
  NodeState& node = member.node();
  std::uint32_t device = kAnyDevice;
  {
    RobustLock lock(node.lock);
    const ClientRecord& record = node.clients[member.slot()];
    if (record.pid != getpid() || record.state != ClientState::Running) return std::nullopt;
    device = record.device;
  }
  if (device >= node.deviceCount || device >= kMaxDevices) return std::nullopt;
  return PlacedDevice{device, node.identityOf(device), node.deviceCount};
}

std::optional<AdmissionClient::PlacedDevice>
AdmissionClient::requestPlacement(std::uint64_t weightedDemand, std::uint64_t peakDemand, milliseconds timeout) {
  NodeMembership& member = *membership_;
  const std::uint32_t slot = member.slot();
  if (slot == kNoSlot) return std::nullopt;
  NodeState& node = member.node();
  {
    BoundedNodeLock lock(node, options_.nodeLockTimeout);
    if (!lock.held()) return std::nullopt;
    if (!ClientRecords(node).requestPlacement(slot, getpid(), weightedDemand, peakDemand)) return std::nullopt;
  }
  Message request = Message::of(MessageKind::AdmissionRequest, getpid(), slot);
  request.weightedDemand = weightedDemand;
  request.peakDemand = peakDemand;
  // A lost message costs nothing: mqxd places from the record on every pass.
  (void)sendTo(member.names().daemonQueue, request);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::uint32_t device = kAnyDevice;
    {
      BoundedNodeLock lock(node, options_.nodeLockTimeout);
      if (!lock.held()) return std::nullopt;
      ClientRecords records(node);
      if (!records.beat(slot, getpid())) return std::nullopt;
      device = records[slot].device;
      if (device == kAnyDevice && !processAlive(node.daemonPid)) return std::nullopt;
    }
    if (device < node.deviceCount && device < kMaxDevices)
      return PlacedDevice{device, node.identityOf(device), node.deviceCount};
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

void AdmissionClient::finishQuery() {
  NodeMembership& member = *membership_;
  if (member.slot() == kNoSlot || !member.inJoiningProcess()) return;
  Message message = Message::of(MessageKind::QueryFinished, getpid(), member.slot());
  {
    RobustLock lock(member.node().lock);
    const ClientRecord& record = member.node().clients[member.slot()];
    message.bytes = record.observedPeak;
    message.setName(record.name);
  }
  // Freed now, so the daemon's admission pass no longer counts it.
  member.retire(message);
}

bool AdmissionClient::updateDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand) {
  return sendDemand(MessageKind::DemandUpdate, weightedDemand, peakDemand);
}

bool AdmissionClient::sendDemand(MessageKind kind, std::uint64_t weightedDemand, std::uint64_t peakDemand) {
  NodeMembership& member = *membership_;
  if (member.slot() == kNoSlot || !member.inJoiningProcess()) return false;
  if (member.role() == NodeMembership::Role::Memory) {
    // Only a client that has a query record to update says so; mqxd
    // re-checks everything against the segment anyway.
    RobustLock lock(member.node().lock);
    if (member.node().clients[member.slot()].querySlot == kNoSlot) return false;
  }
  Message message = Message::of(kind, getpid(), member.slot());
  message.weightedDemand = weightedDemand;
  message.peakDemand = peakDemand;
  return sendTo(member.names().daemonQueue, message);
}

bool AdmissionClient::declareOperator(double seconds, std::uint64_t bytes) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return false;
  std::uint64_t weighted = 0, peak = 0;
  {
    std::lock_guard lock(demandMutex_);
    declaredDemand_.add(seconds, bytes);
    weighted = declaredDemand_.weighted();
    peak = declaredDemand_.peak();
    declared_.store(true, std::memory_order_relaxed);
  }
  return updateDemand(weighted, peak);
}

void AdmissionClient::observeLaunchFootprint(std::uint64_t bytes) {
  // The launch path: one relaxed load when the query declared its plan, else
  // a clock read; a message at most once per interval (sendDemand checks
  // that this is the joining process, not a fork() child: a system call
  // saved on every launch).
  if (declared_.load(std::memory_order_relaxed)) return;
  std::uint64_t weighted = 0, peak = 0;
  {
    std::lock_guard lock(demandMutex_);
    const auto now = Clock::now();
    if (windowStart_ == Clock::time_point{}) windowStart_ = now;
    windowFootprint_ = std::max(windowFootprint_, bytes);
    const auto elapsed = now - windowStart_;
    if (elapsed < milliseconds(options_.demandReportIntervalMilliseconds)) return;
    // Paper §5: each interval is one operator of the query, its mᵢ the most
    // bytes one kernel in it referenced, its tᵢ the interval's length (the
    // time between launches included: the query holds its data meanwhile).
    // The demand is m = Σ tᵢmᵢ / Σ tᵢ over the intervals so far, not the
    // last interval's mᵢ: a query would otherwise jump to the peak of its
    // current phase and back.
    const double seconds = std::chrono::duration<double>(elapsed).count();
    observedDemand_.add(seconds, windowFootprint_);
    windowStart_ = now;
    windowFootprint_ = 0;
    weighted = observedDemand_.weighted();
    peak = observedDemand_.peak();
    if (weighted == reportedWeighted_ && peak == reportedPeak_) return;
    reportedWeighted_ = weighted;
    reportedPeak_ = peak;
  }
  // A footprint, not a declaration: mqxd takes it only for a query that
  // declared no demand (daemon/declared_demand.hpp says why).
  sendDemand(MessageKind::FootprintUpdate, weighted, peak);
}

} // namespace mqx::ipc
