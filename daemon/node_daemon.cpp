#include "node_daemon.hpp"

#include <mqueue.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx::daemon {
namespace {

using namespace mqx::ipc;

std::uint64_t nodeCapacity(const Config& config) {
  if (config.daemonCapacity != 0) return config.daemonCapacity;
  if (config.deviceMemoryLimit != 0) return config.deviceMemoryLimit;
  return config.simCapacity;
}

// The most a demand may be (daemon.capacity's own limit): a larger value in
// a message is refused, never added up.
constexpr std::uint64_t kMaxDemandBytes = std::uint64_t{1} << 50;

bool demandsInRange(const Message& message) {
  return message.weightedDemand <= kMaxDemandBytes && message.peakDemand <= kMaxDemandBytes &&
         (message.peakDemand == 0 || message.weightedDemand <= message.peakDemand);
}

const char* kindName(MessageKind kind) {
  switch (kind) {
  case MessageKind::AdmissionRequest: return "AdmissionRequest";
  case MessageKind::DemandUpdate: return "DemandUpdate";
  case MessageKind::QueryFinished: return "QueryFinished";
  default: return "message";
  }
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
  trace_ = trace::TraceRecorder::open(config.traceFile, "mqxd", config.traceBufferEvents);
  if (trace_) trace_->nameTrack(trace::kAdmissionTrack, "admission decisions");
  metrics_ = std::make_unique<MetricsExporter>(config);
  if (metrics_->port() != 0) log(LogLevel::Info, "mqxd: metrics on http://127.0.0.1:{}/metrics", metrics_->port());
  mps_ = std::make_unique<MpsControl>(config);
  log(LogLevel::Info, "mqxd: node {} ready: budget {} MiB, admission {}{}", names_.segment, capacity_ >> 20,
      toString(config.admission),
      config.admission == AdmissionKind::Fix ? fmt::format("-{}", config.admissionFixN) : "");
}

NodeDaemon::~NodeDaemon() {
  // Clients that died since the last check: their queues go with mqxd's own
  // (nobody else removes them).
  reclaimDeadClients();
  if (metrics_) metrics_->writeFile(metrics()); // the last state, for whoever reads the file after
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
      if (trace_) traceNode();
      for (pid_t pid : launches_.expire(now, processAlive))
        mq_unlink(launchReplyQueue(names_, pid).c_str());
    }
    admitPostponed();
    if (metrics_->enabled()) metrics_->serve([this] { return metrics(); });
  }
}

void NodeDaemon::handle(const Message& message) {
  NodeState& node = segment_->state();
  switch (message.kind) {
  case MessageKind::AdmissionRequest: {
    if (message.slot == kNoSlot) return refuse(message, "names no client record");
    if (!demandsInRange(message)) return refuse(message, "demand out of range");
    RobustLock lock(node.lock);
    ClientRecord& record = node.clients[message.slot];
    if (record.pid != message.pid) return refuse(message, "not the registered client of the slot");
    if (record.state != ClientState::Waiting) return; // stale (admitted from its record meanwhile)
    record.weightedDemand = message.weightedDemand;
    record.peakDemand = message.peakDemand;
    record.admissionRequested = 1;
    applyLearnedDemand(record);
    return;
  }
  case MessageKind::DemandUpdate: {
    // From the query's own record (mqx-run) or from one of its processes (a
    // memory client whose record names the query): paper §5, a query's
    // demand is updated as it runs. The loop re-runs admission after this.
    if (message.slot == kNoSlot) return refuse(message, "names no client record");
    if (!demandsInRange(message)) return refuse(message, "demand out of range");
    RobustLock lock(node.lock);
    ClientRecord& sender = node.clients[message.slot];
    if (sender.pid != message.pid || sender.state == ClientState::Free)
      return refuse(message, "not the registered client of the slot");
    const std::uint32_t target = sender.state == ClientState::Memory ? sender.querySlot : message.slot;
    if (target >= kMaxClients) return;
    ClientRecord& query = node.clients[target];
    if (query.state != ClientState::Waiting && query.state != ClientState::Running) return;
    if (sender.state == ClientState::Memory) {
      // One process of the query: its own demand, and the query's is the sum
      // over its live processes (they hold device memory at the same time),
      // not whichever reported last.
      sender.weightedDemand = message.weightedDemand;
      sender.peakDemand = message.peakDemand;
      setDemandFromProcesses(node, target);
    } else {
      query.weightedDemand = message.weightedDemand;
      query.peakDemand = message.peakDemand;
    }
    log(LogLevel::Debug, "mqxd: query '{}' demand now {} MiB weighted, {} MiB peak", query.name,
        query.weightedDemand >> 20, query.peakDemand >> 20);
    return;
  }
  case MessageKind::LaunchTuningRequest:
  case MessageKind::LaunchFinished:
    if (auto reply = launches_.handle(message)) sendTo(launchReplyQueue(names_, message.pid), *reply);
    return;
  case MessageKind::QueryFinished: {
    // Neither the name nor the bytes of the message are trusted: the query
    // mqxd admitted in that slot, with the pid it registered, and the peak
    // mqxd observed itself are what it learns (observeQueries).
    if (message.slot == kNoSlot) return refuse(message, "names no client record");
    RunningQuery& query = running_[message.slot];
    if (query.pid == 0 || query.pid != message.pid) return refuse(message, "no query of this pid ran in the slot");
    {
      // The last pass's observation may be a liveness interval old.
      RobustLock lock(node.lock);
      const ClientRecord& record = node.clients[message.slot];
      if (record.pid == query.pid) query.observedPeak = std::max(query.observedPeak, record.observedPeak);
    }
    if (query.observedPeak > 0) history_.record(query.name, query.observedPeak);
    query = RunningQuery{};
    return;
  }
  default: return; // Wake: the loop looks at the segment anyway
  }
}

// A waiting query that declares nothing: the demand learned from earlier runs
// of the query (paper §5). Call with the node's lock held.
void NodeDaemon::applyLearnedDemand(ClientRecord& record) {
  if (record.weightedDemand != 0 || record.peakDemand != 0) return;
  if (auto learned = history_.demandOf(record.name)) {
    record.weightedDemand = record.peakDemand = *learned;
    log(LogLevel::Info, "mqxd: query '{}' declares no demand; learned {} MiB", record.name, *learned >> 20);
  }
}

// Call with the node's lock held.
void NodeDaemon::setDemandFromProcesses(NodeState& node, std::uint32_t querySlot) {
  std::uint64_t weighted = 0, peak = 0;
  for (const ClientRecord& record : node.clients) {
    if (record.state != ClientState::Memory || record.querySlot != querySlot) continue;
    weighted += record.weightedDemand;
    peak += record.peakDemand;
  }
  ClientRecord& query = node.clients[querySlot];
  query.weightedDemand = std::min(weighted, kMaxDemandBytes);
  query.peakDemand = std::min(std::max(peak, weighted), kMaxDemandBytes);
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
      if (trace_)
        trace_->record(trace::instantEvent("client died", "liveness", trace::kAdmissionTrack)
                           .argument("pid", static_cast<std::uint64_t>(record.pid))
                           .argument("reclaimed_bytes", record.budgetHeld)
                           .withLabel(record.name));
      node.retire(record); // its last published activity stays in the node's totals
      dead.push_back(record.pid);
    }
  }
  for (pid_t pid : dead) {
    mq_unlink(names_.evictQueue(pid).c_str());
    mq_unlink(names_.replyQueue(pid).c_str());
    mq_unlink(launchReplyQueue(names_, pid).c_str());
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
    if (record.state != ClientState::Running) continue;
    record.observedPeak = std::max(record.observedPeak, held[i]);
    if (running_[i].pid == record.pid)
      running_[i].observedPeak = std::max(running_[i].observedPeak, record.observedPeak);
  }
}

void NodeDaemon::traceDecision(const char* decision, const ClientRecord& record, std::uint64_t runningWeighted) {
  if (!trace_) return;
  trace_->record(trace::instantEvent(decision, "admission", trace::kAdmissionTrack)
                     .argument("weighted_demand", record.weightedDemand)
                     .argument("peak_demand", record.peakDemand)
                     .argument("running_weighted_demand", runningWeighted)
                     .argument("capacity", capacity_)
                     .withLabel(record.name));
}

void NodeDaemon::traceNode() {
  const NodeMetrics now = metrics();
  std::uint64_t waiting = 0, runningWeighted = 0;
  for (const ClientSnapshot& client : now.node.clients) {
    waiting += client.state == ClientState::Waiting ? 1 : 0;
    runningWeighted += client.state == ClientState::Running ? client.weightedDemand : 0;
  }
  trace_->record(trace::counterEvent("node used", "bytes", now.node.usedBytes));
  trace_->record(trace::counterEvent("admission queue", "queries", waiting));
  trace_->record(trace::counterEvent("running weighted demand", "bytes", runningWeighted));
}

NodeMetrics NodeDaemon::metrics() {
  NodeMetrics result;
  NodeState& node = segment_->state();
  {
    RobustLock lock(node.lock);
    result.node = snapshotOf(node);
  }
  result.queriesAdmitted = queriesAdmitted_;
  result.admissionPostponements = postponements_;
  result.messagesRefused = messagesRefused_;
  result.uptimeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return result;
}

void NodeDaemon::refuse(const Message& message, const char* why) {
  ++messagesRefused_;
  if (trace_)
    trace_->record(trace::instantEvent("message refused", "security", trace::kAdmissionTrack)
                       .argument("pid", static_cast<std::uint64_t>(message.pid))
                       .argument("slot", message.slot)
                       .argument("kind", static_cast<std::uint64_t>(message.kind)));
  const auto now = std::chrono::steady_clock::now();
  if (now - lastRefusalLog_ < std::chrono::seconds(1)) {
    ++refusalsNotLogged_;
    return;
  }
  lastRefusalLog_ = now;
  log(LogLevel::Warn, "mqxd: refused {} from pid {} naming slot {}: {}{}", kindName(message.kind), message.pid,
      message.slot == kNoSlot ? std::string("none") : std::to_string(message.slot), why,
      refusalsNotLogged_ != 0 ? fmt::format(" ({} more refused in the last second, not logged)", refusalsNotLogged_)
                              : std::string());
  refusalsNotLogged_ = 0;
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
      ClientRecord& record = node.clients[i];
      if (record.state == ClientState::Running)
        running.push_back({i, std::max(record.weightedDemand, held[i]), std::max(record.peakDemand, held[i])});
      if (record.state == ClientState::Waiting && record.admissionRequested != 0) {
        applyLearnedDemand(record);
        waiting.push_back({i, record.weightedDemand, record.peakDemand});
        arrival[i] = record.arrival;
      }
    }
    if (waiting.empty()) return;
    std::sort(waiting.begin(), waiting.end(),
              [&](const QueryDemand& a, const QueryDemand& b) { return arrival[a.id] < arrival[b.id]; });
    std::uint64_t runningWeighted = 0;
    for (const QueryDemand& query : running)
      runningWeighted += query.weighted;
    const auto chosen = policy_.admit(running, waiting);
    for (std::uint32_t id : chosen) {
      ClientRecord& record = node.clients[id];
      record.state = ClientState::Running;
      admitted.emplace_back(record.pid, id);
      ++queriesAdmitted_;
      RunningQuery& query = running_[id];
      query = RunningQuery{record.pid, 0, {}};
      std::memcpy(query.name, record.name, sizeof query.name);
      query.name[sizeof query.name - 1] = '\0';
      log(LogLevel::Info, "mqxd: admitting query '{}' (pid {}, weighted demand {} MiB, peak {} MiB)", record.name,
          record.pid, record.weightedDemand >> 20, record.peakDemand >> 20);
      traceDecision("admitted", record, runningWeighted);
    }
    // A postponed query is counted (and traced) once per arrival, not on
    // every pass of the loop.
    for (const QueryDemand& query : waiting) {
      if (std::find(chosen.begin(), chosen.end(), query.id) != chosen.end()) continue;
      ClientRecord& record = node.clients[query.id];
      if (postponedArrival_[query.id] == record.arrival) continue;
      postponedArrival_[query.id] = record.arrival;
      ++postponements_;
      traceDecision("postponed", record, runningWeighted);
    }
  }
  for (auto [pid, slot] : admitted)
    sendTo(names_.replyQueue(pid), Message::of(MessageKind::Admitted, getpid(), slot));
}

} // namespace mqx::daemon
