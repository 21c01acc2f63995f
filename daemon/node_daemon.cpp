#include "node_daemon.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/files.hpp"
#include "common/log.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "node_capacity.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx::daemon {
namespace {

using namespace mqx::ipc;

// The requests queue's depth: a full queue loses only the message, since
// admission reads the records (AdmissionClient::waitForAdmission).
constexpr std::size_t kRequestQueueCapacity = 64;
// A receive that returns at once: a past deadline still takes a queued
// message (mq_timedreceive checks the deadline only when it would block).
constexpr std::chrono::milliseconds kNoWait{0};

// The node's devices and their budgets (docs/daemon.md, "Capacity" and
// "Several GPUs"), with what mqxd learned of each in its log. mqxd holds
// nothing of them itself: its host block pool has no CUDA context.
std::vector<DeviceEntry> devicesOf(const Config& config) {
  std::size_t listed = 0;
  const std::vector<NodeDevice> devices = nodeDevices(config, [&] {
    std::string why;
    auto gpus = probeDevices(&why);
    if (gpus.empty()) log(LogLevel::Info, "mqxd: no GPU memory found ({})", why);
    listed = gpus.size();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const DeviceMemory& gpu = gpus[i];
      if (gpu.usedBytes > deviceReserveBytes(gpu.totalBytes))
        log(LogLevel::Warn,
            "mqxd: {} MiB of the device {} are in use already, more than the {} MiB reserve: its budget may not "
            "fit (set daemon.capacity)",
            gpu.usedBytes >> 20, gpu.identity, deviceReserveBytes(gpu.totalBytes) >> 20);
    }
    return gpus;
  });
  if (listed > devices.size())
    log(LogLevel::Warn, "mqxd: {} GPUs listed, the node keeps the first {} (set CUDA_VISIBLE_DEVICES)", listed,
        devices.size());
  std::vector<DeviceEntry> entries;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const NodeDevice& device = devices[i];
    DeviceEntry entry;
    std::snprintf(entry.identity, sizeof entry.identity, "%s", device.identity.c_str());
    entry.capacity = device.capacity;
    entries.push_back(entry);
    log(LogLevel::Info, "mqxd: device {} {}: budget {} MiB: {}", i, device.identity, device.capacity >> 20,
        device.origin);
  }
  return entries;
}

AdmissionPolicy admissionPolicyOf(const Config& config, std::shared_ptr<const ConcurrencyLimits> limits) {
  AdmissionPolicy policy;
  policy.kind = config.admission;
  policy.fixN = config.admissionFixN;
  policy.limits = std::move(limits);
  policy.peakOvercommit = config.adaptivePeakOvercommit;
  return policy;
}

AdaptiveOptions adaptiveOptionsOf(const Config& config) {
  AdaptiveOptions options;
  options.windowSeconds = config.adaptiveWindowMilliseconds / 1000.0;
  options.initialLimit = config.adaptiveInitialLimit;
  options.maxLimit = std::max(config.adaptiveMaxLimit, 1u);
  options.evictionShare = config.adaptiveEvictionShare;
  options.evictionWindows = config.adaptiveEvictionWindows;
  options.gain = config.adaptiveGain;
  options.growthEvictionShare = config.adaptiveGrowthEvictionShare;
  options.guessedWorkShare = config.adaptiveGuessedWorkShare;
  options.pagingSettleSeconds = config.adaptivePagingSettleMilliseconds / 1000.0;
  options.levelEvidenceSeconds = config.adaptiveLevelEvidenceMilliseconds / 1000.0;
  return options;
}

std::vector<std::uint64_t> capacitiesOf(const std::vector<DeviceEntry>& devices) {
  std::vector<std::uint64_t> capacities;
  for (const DeviceEntry& device : devices)
    capacities.push_back(device.capacity);
  return capacities;
}

// The queues a client process of the node may have.
std::vector<std::string> queuesOf(const IpcNames& names, pid_t pid) {
  return {names.evictQueue(pid), names.replyQueue(pid), launchReplyQueue(names, pid)};
}

// The pid of a client queue's name in /dev/mqueue ("<prefix>-evict-<pid>",
// "-reply-", "-launch-"), or 0.
pid_t clientOfQueue(const IpcNames& names, const std::string& entry) {
  if (!entry.starts_with(names.prefix + "-")) return 0;
  for (const char* kind : {"evict-", "reply-", "launch-"}) {
    const std::string head = names.prefix + "-" + kind;
    if (!entry.starts_with(head) || entry.size() == head.size() || entry.size() > head.size() + 9) continue;
    const std::string digits = entry.substr(head.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    return static_cast<pid_t>(std::stol(digits));
  }
  return 0;
}

bool demandsInRange(const Message& message) {
  return message.weightedDemand <= kMaxDemandBytes && message.peakDemand <= kMaxDemandBytes &&
         (message.peakDemand == 0 || message.weightedDemand <= message.peakDemand);
}

const char* kindName(MessageKind kind) {
  switch (kind) {
  case MessageKind::AdmissionRequest: return "AdmissionRequest";
  case MessageKind::DemandUpdate: return "DemandUpdate";
  case MessageKind::FootprintUpdate: return "FootprintUpdate";
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

// Of two mqxd started at the same instant, the other says who runs (was:
// "File exists").
FileDescriptor lockInstance(const IpcNames& names) {
  FileDescriptor lock(::open(names.lockFile.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid()) throw std::runtime_error(fmt::format("cannot open {}: {}", names.lockFile, std::strerror(errno)));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (auto running = SharedSegment::open(names); running && processAlive(running->state().daemonPid))
      throw std::runtime_error(
          fmt::format("mqxd is already running (pid {}, segment {})", running->state().daemonPid, names.segment));
    throw std::runtime_error(
        fmt::format("another mqxd of this user and instance is starting or running (it holds {})", names.lockFile));
  }
  return lock;
}

NodeDaemon::NodeDaemon(const Config& config, NodeDaemonOptions options)
    : config_(config), names_(IpcNames::forInstance(config.daemonInstance, getuid())), devices_(devicesOf(config)),
      limits_(std::make_shared<ConcurrencyLimits>()),
      placement_(admissionPolicyOf(config, limits_), config.placement, capacitiesOf(devices_)),
      history_(historyPath(config)), undeclared_(UndeclaredOptions{config.undeclaredSettleMilliseconds / 1000.0}),
      launches_(std::chrono::milliseconds(config.launchLeaseMilliseconds), static_cast<std::uint32_t>(devices_.size())),
      rosterPath_(names_.rosterFile) {
  if (!names_.problem.empty()) throw std::runtime_error(names_.problem);
  instanceLock_ = options.instanceLock.valid() ? std::move(options.instanceLock) : lockInstance(names_);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    adaptive_.emplace_back(adaptiveOptionsOf(config));
    limits_->perDevice[i] = adaptive_.back().admissionLimit();
  }
  deviceCounters_.resize(devices_.size());
  const std::vector<pid_t> previous = previousClients(); // before create() removes a crashed mqxd's segment
  previousNames_ = names_;
  segment_ = SharedSegment::create(names_, devices_);
  requests_ = MessageQueue::create(names_.daemonQueue, kRequestQueueCapacity);
  removeQueuesOfDead(previous);
  std::remove(rosterPath_.c_str());
  trace_ = trace::TraceRecorder::open(config.traceFile, "mqxd", config.traceBufferEvents);
  if (trace_) trace_->nameTrack(trace::kAdmissionTrack, "admission decisions");
  metrics_ = std::make_unique<MetricsExporter>(config);
  if (metrics_->port() != 0) log(LogLevel::Info, "mqxd: metrics on http://127.0.0.1:{}/metrics", metrics_->port());
  mps_ = std::make_unique<MpsControl>(config);
  std::string devices;
  for (std::size_t i = 0; i < devices_.size(); ++i)
    devices += fmt::format("{}{} {} MiB", i == 0 ? "" : ", ", devices_[i].identity, devices_[i].capacity >> 20);
  log(LogLevel::Info, "mqxd: node {} ready: budget {} MiB, admission {}{}; {} device{}: {}{}", names_.segment,
      segment_->state().capacityOf() >> 20, toString(config.admission),
      config.admission == AdmissionKind::Fix ? fmt::format("-{}", config.admissionFixN)
      : config.admission == AdmissionKind::Adaptive
          ? fmt::format(" (limit {} a device to start)", limits_->perDevice[0])
          : "",
      devices_.size(), devices_.size() == 1 ? "" : "s", devices,
      devices_.size() > 1 ? fmt::format(", placement {}", toString(config.placement)) : "");
}

NodeDaemon::~NodeDaemon() {
  // Nothing here may wait for long or throw: the segment and queue names go
  // with the members whatever happens (docs/hardening.md).
  shuttingDown_ = true;
  if (segmentDamaged_ || segment_->damage()) return; // said by run()'s SegmentDamaged; the names go with the members
  writeRoster(); // the clients still alive: their queues are removed once they die (the next mqxd's start)
  try {
    // Clients that died since the last check: their queues go with mqxd's own
    // (nobody else removes them).
    reclaimDeadClients();
    if (metrics_) metrics_->writeFile(metrics()); // the last state, for whoever reads the file after
    // Clients waiting for admission notice that the daemon is gone.
    NodeState& node = segment_->state();
    RobustLock lock = lockNode();
    log(LogLevel::Info,
        "mqxd: shutting down; {} cross-process evictions freed {} MiB; {} dead clients, {} MiB reclaimed; removing {} "
        "and {}",
        node.evictionRequestsServed, node.bytesEvictedForOthers >> 20, node.deadClients, node.reclaimedBytes >> 20,
        names_.segment, names_.daemonQueue);
  } catch (const StopRequested&) {
    log(LogLevel::Warn, "mqxd: shutting down without the node lock (held by thread {}); removing {} and {}",
        segment_->state().lock.holder(), names_.segment, names_.daemonQueue);
  } catch (const std::exception& error) {
    log(LogLevel::Warn, "mqxd: shutting down: {}", error.what());
  }
}

RobustLock NodeDaemon::lockNode() {
  NodeState& node = segment_->state();
  const auto start = std::chrono::steady_clock::now();
  bool reported = false;
  for (;;) {
    checkSegment();
    switch (node.lock.lockWithin(std::chrono::milliseconds(100))) {
    case RobustMutex::TimedLock::Taken: return RobustLock(node.lock, std::adopt_lock, false);
    case RobustMutex::TimedLock::TakenFromDeadOwner: return RobustLock(node.lock, std::adopt_lock, true);
    case RobustMutex::TimedLock::Unusable:
      segmentDamaged_ = true;
      throw SegmentDamaged(
          fmt::format("segment {} is damaged (its lock is no usable mutex): refusing it", names_.segment));
    case RobustMutex::TimedLock::TimedOut: break;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if ((stop_ != nullptr && stop_->load()) || (shuttingDown_ && waited >= std::chrono::seconds(1)))
      throw StopRequested{};
    if (!reported && waited >= std::chrono::seconds(2)) {
      const pid_t holder = node.lock.holder();
      log(LogLevel::Warn, "mqxd: the node lock has been held for 2 s by thread {}{}; waiting (SIGTERM stops mqxd)",
          holder, processStopped(holder) ? ", which is stopped (SIGCONT resumes it)" : "");
      reported = true;
    }
  }
}

void NodeDaemon::run(const std::atomic<bool>& stop) {
  stop_ = &stop;
  const auto interval = std::chrono::milliseconds(config_.livenessIntervalMilliseconds);
  auto lastCheck = std::chrono::steady_clock::now();
  Message message;
  try {
    while (!stop.load()) {
      if (requests_->receive(&message, interval)) {
        handle(message);
        // Everything already queued is handled before the admission pass
        // below. Admission reads the records, which a later query writes
        // before its message: a demand update sent before that query arrived
        // must count when it is considered (docs/daemon.md, "Messages and
        // records"). Bounded by the queue's capacity so that a flood of
        // messages cannot starve the pass.
        for (std::size_t more = 0; more < kRequestQueueCapacity && requests_->receive(&message, kNoWait); ++more)
          handle(message);
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - lastCheck >= interval) {
        lastCheck = now;
        checkSegment();
        reclaimDeadClients();
        observeQueries();
        if (config_.admission == AdmissionKind::Adaptive) observeAdmission();
        reportStoppedHolders();
        if (!orphans_.empty()) removeQueuesOfDead(orphans_);
        if (trace_) traceNode();
        for (pid_t pid : launches_.expire(now, processAlive))
          removeQueue(launchReplyQueue(names_, pid));
      }
      placeArrivals();
      admitPostponed();
      if (metrics_->enabled()) metrics_->serve([this] { return metrics(); });
    }
  } catch (const StopRequested&) {
    log(LogLevel::Info, "mqxd: stop requested while waiting for the node lock");
  }
  checkSegment(); // a damage found only now is said, not shut down over
}

void NodeDaemon::placeArrivals() {
  NodeState& node = segment_->state();
  RobustLock lock = lockNode();
  // The loop runs this on every message: nothing more than one scan unless
  // a query waits to be placed.
  const auto unplaced = [](const ClientRecord& record) {
    return record.state == ClientState::Waiting && record.admissionRequested != 0 && record.placeOnArrival != 0 &&
           record.device == kAnyDevice;
  };
  if (std::none_of(std::begin(node.clients), std::end(node.clients), unplaced)) return;
  std::vector<QueryDemand> bound;
  std::vector<std::uint32_t> arrivals;
  const auto held = heldByQuery();
  const double now = secondsNow();
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    ClientRecord& record = node.clients[i];
    const bool query = record.state == ClientState::Running || record.state == ClientState::Waiting;
    if (query && record.device != kAnyDevice)
      bound.push_back(demandFor(record, i, held[i], now));
    else if (unplaced(record))
      arrivals.push_back(i);
  }
  std::sort(arrivals.begin(), arrivals.end(),
            [&](std::uint32_t a, std::uint32_t b) { return node.clients[a].arrival < node.clients[b].arrival; });
  for (const std::uint32_t slot : arrivals) {
    ClientRecord& record = node.clients[slot];
    takeRequestedDemand(record);
    const QueryDemand query = demandFor(record, slot, 0, now);
    records().place(slot, placement_.placeOnArrival(bound, query));
    bound.push_back({slot, query.weighted, query.peak, record.device});
    log(LogLevel::Info, "mqxd: query '{}' (pid {}) will run on device {} {}; it starts before its admission",
        record.name, record.pid, record.device, devices_[record.device].identity);
  }
}

void NodeDaemon::checkSegment() {
  if (auto damage = segment_->damage()) {
    segmentDamaged_ = true;
    throw SegmentDamaged(fmt::format("segment {} is damaged ({}): refusing it", names_.segment, *damage));
  }
}

std::vector<pid_t> NodeDaemon::previousClients() {
  std::vector<pid_t> pids;
  // A crashed mqxd's segment names its clients (create() refuses a live
  // mqxd's; then nothing here is used).
  if (auto stale = SharedSegment::open(names_); stale && !processAlive(stale->state().daemonPid)) {
    NodeState& node = stale->state();
    // Its lock may be held by a stopped client: the pids are only checked
    // for liveness, so they are read without it then.
    const auto taken = node.lock.lockWithin(std::chrono::milliseconds(100));
    for (const ClientRecord& record : node.clients)
      if (record.state != ClientState::Free) pids.push_back(record.pid);
    if (taken == RobustMutex::TimedLock::Taken || taken == RobustMutex::TimedLock::TakenFromDeadOwner)
      node.lock.unlock();
  }
  // The clients still alive when the last mqxd stopped.
  std::string error;
  std::istringstream roster(readRegularFile(rosterPath_, 64 << 10, "a list of clients", &error).value_or(""));
  pid_t pid = 0;
  for (int count = 0; count < 4 * static_cast<int>(kMaxClients) && roster >> pid; ++count)
    if (pid > 0) pids.push_back(pid);
  // Where the queue file system is mounted, every queue of the node is seen.
  if (DIR* queues = opendir("/dev/mqueue"); queues != nullptr) {
    while (const dirent* entry = readdir(queues))
      if (const pid_t client = clientOfQueue(names_, entry->d_name); client > 0) pids.push_back(client);
    closedir(queues);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

void NodeDaemon::removeQueuesOfDead(const std::vector<pid_t>& pids) {
  std::vector<pid_t> alive;
  std::size_t removed = 0, clients = 0;
  for (pid_t pid : pids) {
    if (processAlive(pid)) {
      alive.push_back(pid);
      continue;
    }
    std::size_t before = removed;
    for (const std::string& name : queuesOf(previousNames_, pid))
      removed += removeQueue(name) ? 1 : 0;
    clients += removed != before ? 1 : 0;
  }
  if (removed != 0)
    log(LogLevel::Info, "mqxd: removed {} queues of {} clients that died while no mqxd served them", removed, clients);
  orphans_ = std::move(alive);
}

void NodeDaemon::writeRoster() {
  // Read without the lock (it may be held by a stopped process): a pid read
  // mid-update is only checked for liveness by the next mqxd.
  std::vector<pid_t> pids = orphans_;
  for (const ClientRecord& record : segment_->state().clients)
    if (record.state != ClientState::Free && record.pid > 0 && processAlive(record.pid)) pids.push_back(record.pid);
  std::remove(rosterPath_.c_str());
  if (pids.empty()) {
    // Nobody is left who knows the node's names: the next node's are new
    // (made by the first process that looks), whatever someone saw of these
    // in /dev/shm. Under the instance lock: no other mqxd starts meanwhile.
    std::remove(names_.nodeNameFile.c_str());
    return;
  }
  std::string text;
  for (pid_t pid : pids)
    text += std::to_string(pid) + "\n";
  if (const std::string error = writeFileReplacing(rosterPath_, text, 0600); !error.empty())
    log(LogLevel::Warn, "mqxd: {}: the queues of {} clients still alive stay when they die", error, pids.size());
}

void NodeDaemon::reportStoppedHolders() {
  // docs/daemon.md, "Stopped holders": a stopped process keeps its device
  // memory and serves no eviction; mqxd says so once per stop (and again
  // when it continues), and status, top and the waiting queries' messages
  // name it.
  struct Holder {
    std::uint32_t slot;
    pid_t pid;
    std::uint64_t held;
    std::string name;
  };
  std::vector<Holder> holders;
  {
    NodeState& node = segment_->state();
    RobustLock lock = lockNode();
    const auto held = heldByQuery();
    for (std::uint32_t i = 0; i < kMaxClients; ++i) {
      const ClientRecord& record = node.clients[i];
      if (record.state == ClientState::Running || record.state == ClientState::Memory)
        holders.push_back({i, record.pid, record.state == ClientState::Running ? held[i] : record.budgetHeld,
                           std::string(record.name, strnlen(record.name, sizeof record.name))});
      else if (stoppedReported_[i] != 0)
        stoppedReported_[i] = 0;
    }
  }
  for (const Holder& holder : holders) {
    const bool stopped = processStopped(holder.pid);
    if (stopped && stoppedReported_[holder.slot] != holder.pid) {
      stoppedReported_[holder.slot] = holder.pid;
      log(LogLevel::Warn,
          "mqxd: client {} '{}' (pid {}) is stopped holding {} MiB; queries waiting for memory wait until it "
          "continues (kill -CONT {}) or ends",
          holder.slot, escapeForTerminal(holder.name), holder.pid, holder.held >> 20, holder.pid);
    } else if (!stopped && stoppedReported_[holder.slot] == holder.pid) {
      stoppedReported_[holder.slot] = 0;
      log(LogLevel::Warn, "mqxd: client {} '{}' (pid {}) continues", holder.slot, escapeForTerminal(holder.name),
          holder.pid);
    }
  }
}

void NodeDaemon::updateDemand(const Message& message) {
  // From the query's own record (mqx-run) or from one of its processes (a
  // memory client whose record names the query): paper §5, a query's demand
  // is updated as it runs. The loop re-runs admission after this.
  if (message.slot == kNoSlot) return refuse(message, "names no client record");
  if (!demandsInRange(message)) return refuse(message, "demand out of range");
  NodeState& node = segment_->state();
  RobustLock lock = lockNode();
  const ClientRecord& sender = node.clients[message.slot];
  if (sender.pid != message.pid || sender.state == ClientState::Free)
    return refuse(message, "not the registered client of the slot");
  const std::uint32_t target = sender.state == ClientState::Memory ? sender.querySlot : message.slot;
  if (target >= kMaxClients) return;
  ClientRecord& query = node.clients[target];
  if (query.state != ClientState::Waiting && query.state != ClientState::Running) return;
  if (query.state == ClientState::Waiting && query.admissionRequested != 0) takeRequestedDemand(query);
  if (message.kind == MessageKind::FootprintUpdate) {
    // What the query's kernels referenced: its demand only where it declared
    // none (DeclaredDemands says why).
    if (declared_.isDeclared(target, query.arrival)) return;
  } else {
    declared_.declared(target, query.arrival);
  }
  if (sender.state == ClientState::Memory) {
    // One process of the query: its own demand, and the query's is the sum
    // over its live processes (they hold device memory at the same time),
    // not whichever reported last.
    records().setDemand(message.slot, message.weightedDemand, message.peakDemand);
    setDemandFromProcesses(node, target);
  } else {
    records().setDemand(target, message.weightedDemand, message.peakDemand);
  }
  log(LogLevel::Debug, "mqxd: query '{}' demand now {} MiB weighted, {} MiB peak ({})", query.name,
      query.weightedDemand >> 20, query.peakDemand >> 20,
      message.kind == MessageKind::FootprintUpdate ? "its launches' footprints" : "declared");
}

void NodeDaemon::handle(const Message& message) {
  NodeState& node = segment_->state();
  switch (message.kind) {
  case MessageKind::AdmissionRequest: {
    if (message.slot == kNoSlot) return refuse(message, "names no client record");
    if (!demandsInRange(message)) return refuse(message, "demand out of range");
    RobustLock lock = lockNode();
    ClientRecord& record = node.clients[message.slot];
    if (record.pid != message.pid) return refuse(message, "not the registered client of the slot");
    if (record.state != ClientState::Waiting) return; // stale (admitted from its record meanwhile)
    records().requestAdmission(message.slot, message.pid, message.weightedDemand, message.peakDemand);
    takeRequestedDemand(record);
    return;
  }
  case MessageKind::DemandUpdate:
  case MessageKind::FootprintUpdate: return updateDemand(message);
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
      RobustLock lock = lockNode();
      const ClientRecord& record = node.clients[message.slot];
      if (record.pid == query.pid) {
        query.observedPeak = std::max(query.observedPeak, record.observedPeak);
        // Its members' last launches, retired after the last sample (a
        // member's counters are mostly published as it leaves).
        countQueryLaunches(query, record.memberLaunches);
      }
    }
    if (query.observedPeak > 0) history_.record(query.name, query.observedPeak);
    const bool firstLearned = !work_.learned();
    work_.finished(query.name, query.launches);
    // The controllers' throughput estimates were in nominal runs until now.
    if (firstLearned && work_.learned())
      for (AdaptiveAdmission& controller : adaptive_)
        controller.forgetEstimates();
    query = RunningQuery{};
    undeclared_.ended(message.slot);
    return;
  }
  default: return; // Wake: the loop looks at the segment anyway
  }
}

void NodeDaemon::reclaimDeadClients() {
  NodeState& node = segment_->state();
  std::vector<pid_t> dead;
  {
    RobustLock lock = lockNode();
    for (std::uint32_t slot = 0; slot < kMaxClients; ++slot) {
      const ClientRecord& record = node.clients[slot];
      if (record.state == ClientState::Free || processAlive(record.pid)) continue;
      log(record.budgetHeld != 0 ? LogLevel::Warn : LogLevel::Info, "mqxd: client {} died; reclaiming its {} bytes",
          record.pid, record.budgetHeld);
      if (trace_)
        trace_->record(trace::instantEvent("client died", "liveness", trace::kAdmissionTrack)
                           .argument("pid", static_cast<std::uint64_t>(record.pid))
                           .argument("reclaimed_bytes", record.budgetHeld)
                           .withLabel(record.name));
      records().reclaimDead(slot); // its last published activity stays in the node's totals
      dead.push_back(record.pid);
    }
  }
  for (pid_t pid : dead)
    for (const std::string& name : queuesOf(names_, pid))
      removeQueue(name);
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
    RobustLock lock = lockNode();
    result.node = snapshotOf(node);
  }
  result.queriesAdmitted = queriesAdmitted_;
  result.queriesPlaced.assign(queriesPlaced_, queriesPlaced_ + devices_.size());
  result.admissionPostponements = postponements_;
  result.messagesRefused = messagesRefused_;
  result.uptimeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (config_.admission == AdmissionKind::Adaptive)
    for (const AdaptiveAdmission& controller : adaptive_) {
      result.admissionLimits.push_back(controller.limit());
      result.secondsPerEviction.push_back(controller.costPerEviction());
    }
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

} // namespace mqx::daemon
