#include "node_daemon.hpp"

#include <mqueue.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>

#include "common/log.hpp"
#include "ipc/launch_tuning_client.hpp"

namespace mqx::daemon {
namespace {

using namespace mqx::ipc;

std::uint64_t nodeCapacity(const Config& config) {
  if (config.daemonCapacity != 0) return config.daemonCapacity;
  if (config.deviceMemoryLimit != 0) return config.deviceMemoryLimit;
  return config.simCapacity;
}

std::string historyPath(const Config& config) {
  if (!config.demandStateFile.empty()) return config.demandStateFile;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.mqx-demand";
}

} // namespace

NodeDaemon::NodeDaemon(const Config& config)
    : config_(config), names_(IpcNames::forInstance(config.daemonInstance, getuid())), capacity_(nodeCapacity(config)),
      history_(historyPath(config)), launches_(std::chrono::milliseconds(config.launchLeaseMilliseconds)) {
  policy_.kind = config.admission;
  policy_.fixN = config.admissionFixN;
  policy_.capacity = capacity_;
  segment_ = SharedSegment::create(names_, capacity_);
  requests_ = MessageQueue::create(names_.daemonQueue, 64);
  mps_ = std::make_unique<MpsControl>(config);
  log(LogLevel::Info, "mqxd: node {} ready: budget {} MiB, admission {}{}", names_.segment, capacity_ >> 20,
      toString(config.admission),
      config.admission == AdmissionKind::Fix ? fmt::format("-{}", config.admissionFixN) : "");
}

NodeDaemon::~NodeDaemon() {
  // Clients waiting for admission notice that the daemon is gone.
  NodeState& node = segment_->state();
  RobustLock lock(node.lock);
  log(LogLevel::Info,
      "mqxd: shutting down; {} cross-process evictions freed {} MiB; {} dead clients, {} MiB reclaimed; removing {} "
      "and {}",
      node.evictionRequestsServed, node.bytesEvictedForOthers >> 20, node.deadClients, node.reclaimedBytes >> 20,
      names_.segment, names_.daemonQueue);
}

void NodeDaemon::run(const std::atomic<bool>& stop) {
  const auto interval = std::chrono::milliseconds(config_.livenessIntervalMilliseconds);
  auto lastCheck = std::chrono::steady_clock::now();
  Message message;
  while (!stop.load()) {
    if (requests_->receive(&message, interval)) handle(message);
    const auto now = std::chrono::steady_clock::now();
    if (now - lastCheck >= interval) {
      lastCheck = now;
      reclaimDeadClients();
      observeQueries();
      for (pid_t pid : launches_.expire(now, processAlive))
        mq_unlink(launchReplyQueue(names_, pid).c_str());
    }
    admitPostponed();
  }
}

void NodeDaemon::handle(const Message& message) {
  NodeState& node = segment_->state();
  switch (message.kind) {
  case MessageKind::AdmissionRequest: {
    if (message.slot == kNoSlot) return;
    RobustLock lock(node.lock);
    ClientRecord& record = node.clients[message.slot];
    if (record.pid != message.pid || record.state != ClientState::Waiting)
      return; // stale or forged: the record is the truth
    record.weightedDemand = message.weightedDemand;
    record.peakDemand = message.peakDemand;
    if (record.weightedDemand == 0 && record.peakDemand == 0) {
      // Nothing declared: the demand learned from earlier runs of the query.
      if (auto learned = history_.demandOf(record.name)) {
        record.weightedDemand = record.peakDemand = *learned;
        log(LogLevel::Info, "mqxd: query '{}' declares no demand; learned {} MiB", record.name, *learned >> 20);
      }
    }
    return;
  }
  case MessageKind::DemandUpdate: {
    // From the query's own record (mqx-run) or from one of its processes (a
    // memory client whose record names the query): paper §5, a query's
    // demand is updated as it runs. The loop re-runs admission after this.
    if (message.slot == kNoSlot) return;
    RobustLock lock(node.lock);
    const ClientRecord& sender = node.clients[message.slot];
    if (sender.pid != message.pid || sender.state == ClientState::Free) return;
    const std::uint32_t target = sender.state == ClientState::Memory ? sender.querySlot : message.slot;
    if (target >= kMaxClients) return;
    ClientRecord& query = node.clients[target];
    if (query.state != ClientState::Waiting && query.state != ClientState::Running) return;
    query.weightedDemand = message.weightedDemand;
    query.peakDemand = message.peakDemand;
    log(LogLevel::Debug, "mqxd: query '{}' demand now {} MiB weighted, {} MiB peak", query.name,
        query.weightedDemand >> 20, query.peakDemand >> 20);
    return;
  }
  case MessageKind::LaunchTuningRequest:
  case MessageKind::LaunchFinished:
    if (auto reply = launches_.handle(message)) sendTo(launchReplyQueue(names_, message.pid), *reply);
    return;
  case MessageKind::QueryFinished:
    if (message.bytes > 0) history_.record(message.name, message.bytes);
    return;
  default: return; // Wake: the loop looks at the segment anyway
  }
}

void NodeDaemon::reclaimDeadClients() {
  NodeState& node = segment_->state();
  std::vector<pid_t> dead;
  {
    RobustLock lock(node.lock);
    for (ClientRecord& record : node.clients) {
      if (record.state == ClientState::Free || processAlive(record.pid)) continue;
      log(record.budgetHeld != 0 ? LogLevel::Warn : LogLevel::Info, "mqxd: client {} died; reclaiming its {} bytes",
          record.pid, record.budgetHeld);
      node.reclaimedBytes += record.budgetHeld;
      ++node.deadClients;
      record.state = ClientState::Free;
      dead.push_back(record.pid);
    }
  }
  for (pid_t pid : dead) {
    mq_unlink(names_.evictQueue(pid).c_str());
    mq_unlink(names_.replyQueue(pid).c_str());
  }
}

std::array<std::uint64_t, kMaxClients> NodeDaemon::heldByQuery() {
  // Call with the lock held. The bytes each query's processes hold now.
  NodeState& node = segment_->state();
  std::array<std::uint64_t, kMaxClients> held{};
  for (const ClientRecord& record : node.clients)
    if (record.state == ClientState::Memory && record.querySlot < kMaxClients)
      held[record.querySlot] += record.budgetHeld;
  return held;
}

void NodeDaemon::observeQueries() {
  // What a running query's processes hold at most is learned for its next
  // run (when it declared nothing).
  NodeState& node = segment_->state();
  RobustLock lock(node.lock);
  const auto held = heldByQuery();
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    ClientRecord& record = node.clients[i];
    if (record.state == ClientState::Running) record.observedPeak = std::max(record.observedPeak, held[i]);
  }
}

void NodeDaemon::admitPostponed() {
  NodeState& node = segment_->state();
  std::vector<std::pair<pid_t, std::uint32_t>> admitted;
  {
    RobustLock lock(node.lock);
    std::vector<QueryDemand> running, waiting;
    std::vector<std::uint64_t> arrival(kMaxClients);
    // A running query's demand is updated as it runs: what it declared or,
    // when more, what its processes hold right now (an undeclared query's
    // demand is what it holds).
    const auto held = heldByQuery();
    for (std::uint32_t i = 0; i < kMaxClients; ++i) {
      const ClientRecord& record = node.clients[i];
      if (record.state == ClientState::Running)
        running.push_back({i, std::max(record.weightedDemand, held[i]), std::max(record.peakDemand, held[i])});
      if (record.state == ClientState::Waiting) {
        waiting.push_back({i, record.weightedDemand, record.peakDemand});
        arrival[i] = record.arrival;
      }
    }
    if (waiting.empty()) return;
    std::sort(waiting.begin(), waiting.end(),
              [&](const QueryDemand& a, const QueryDemand& b) { return arrival[a.id] < arrival[b.id]; });
    for (std::uint32_t id : policy_.admit(running, waiting)) {
      ClientRecord& record = node.clients[id];
      record.state = ClientState::Running;
      admitted.emplace_back(record.pid, id);
      log(LogLevel::Info, "mqxd: admitting query '{}' (pid {}, weighted demand {} MiB, peak {} MiB)", record.name,
          record.pid, record.weightedDemand >> 20, record.peakDemand >> 20);
    }
  }
  for (auto [pid, slot] : admitted)
    sendTo(names_.replyQueue(pid), Message::of(MessageKind::Admitted, getpid(), slot));
}

} // namespace mqx::daemon
