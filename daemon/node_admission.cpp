// NodeDaemon's admission (paper §5) and placement on the node's devices
// (docs/daemon.md, "Several GPUs"): the demand of waiting and running
// queries, what each query's processes hold on its device, and the pass that
// admits postponed queries and places them (DevicePlacement).
#include <algorithm>
#include <array>
#include <cstring>

#include "common/log.hpp"
#include "node_daemon.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx::daemon {

using namespace mqx::ipc;

// A waiting query's request: whether it asked with a demand of its own, noted
// once per arrival (DeclaredDemands: its launch footprints will not replace
// it), else the demand learned from earlier runs of the query (paper §5).
// Call with the node's lock held.
void NodeDaemon::takeRequestedDemand(ClientRecord& record) {
  const std::uint32_t slot = records().slotOf(record);
  declared_.requested(slot, record.arrival, record.weightedDemand != 0 || record.peakDemand != 0);
  if (record.weightedDemand != 0 || record.peakDemand != 0) return;
  if (auto learned = history_.demandOf(record.name)) {
    records().learnDemand(slot, *learned);
    log(LogLevel::Info, "mqxd: query '{}' declares no demand; learned {} MiB", record.name, *learned >> 20);
  }
}

// What admission counts for `record` (in `slot`, holding `held` on its device
// now): what it declared or learned, at least what it holds; for a query
// that declares nothing and was never learned, UndeclaredDemand's figure
// (the whole device until its working set is measured). Call with the node's
// lock held.
QueryDemand NodeDaemon::demandFor(const ClientRecord& record, std::uint32_t slot, std::uint64_t held, double now) {
  QueryDemand query{slot, std::max(record.weightedDemand, held), std::max(record.peakDemand, held), record.device};
  // The paper's named policies keep the paper's rule: nothing declared is 0.
  if (record.weightedDemand != 0 || record.peakDemand != 0 || config_.admission != AdmissionKind::Adaptive)
    return query;
  const NodeState& node = segment_->state();
  std::uint64_t capacity = 0; // of its device, or of the largest where it may run
  for (std::uint32_t device = 0; device < devices_.size(); ++device)
    if (record.device == kAnyDevice || record.device == device) capacity = std::max(capacity, node.capacityOf(device));
  std::optional<std::uint64_t> estimate;
  if (record.state == ClientState::Running) {
    estimate = undeclared_.runningDemand(slot, capacity, now);
  } else {
    estimate = undeclared_.estimateFor(record.name, now);
    if (!estimate) estimate = capacity;
  }
  if (estimate) query.weighted = query.peak = std::max(*estimate, held);
  return query;
}

// The working set of `record` (in `slot`) that the bound on the adaptive limit
// counts (AdaptiveSample::workingSetLimit): its demand's peak now and, while
// it runs, at least the peak it was admitted with where it declared or
// learned one. A learned demand is lowered by its processes' footprints
// (AdmissionClient::observeLaunchFootprint: the most bytes one launch
// referenced per interval), not what the query keeps resident; Weight's
// check goes by them (paper §5), the bound must not (a declared demand is
// not lowered: DeclaredDemands). On
// the H200 (trace-open-gpu-87736a0: three SSB queries running with declared
// peaks of 1.45-1.59 GB, eleven waiting) the limit grew 3 -> 4 on a 4 GiB
// node where no four of the queries' peaks fit, and the four running evicted
// 0.257 of the time. Call with the node's lock held.
std::uint64_t NodeDaemon::workingSetOf(const ClientRecord& record, std::uint32_t slot, std::uint64_t held, double now) {
  const std::uint64_t peak = demandFor(record, slot, held, now).peak;
  const RunningQuery& query = running_[slot];
  if (record.state != ClientState::Running || query.pid != record.pid) return peak;
  return std::max(peak, query.admittedPeak);
}

// Call with the node's lock held.
void NodeDaemon::setDemandFromProcesses(NodeState& node, std::uint32_t querySlot) {
  std::uint64_t weighted = 0, peak = 0;
  for (const ClientRecord& record : node.clients) {
    if (record.state != ClientState::Memory || record.querySlot != querySlot) continue;
    weighted += record.weightedDemand;
    peak += record.peakDemand;
  }
  records().setDemand(querySlot, std::min(weighted, kMaxDemandBytes),
                      std::min(std::max(peak, weighted), kMaxDemandBytes));
}

std::array<std::uint64_t, kMaxClients> NodeDaemon::heldByQuery() {
  // Call with the lock held. The bytes each query's processes hold now.
  NodeState& node = segment_->state();
  std::array<std::uint64_t, kMaxClients> held{};
  for (const ClientRecord& record : node.clients)
    if (record.state == ClientState::Memory && record.querySlot < kMaxClients &&
        record.device == node.clients[record.querySlot].device)
      held[record.querySlot] += record.budgetHeld;
  return held;
}

void NodeDaemon::observeQueries() {
  // What a running query's processes hold at most is learned for its next
  // run (when it declared nothing).
  NodeState& node = segment_->state();
  const double now = secondsNow();
  RobustLock lock = lockNode();
  const auto held = heldByQuery();
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    ClientRecord& record = node.clients[i];
    // A query measured as undeclared stops being so when it ends or
    // declares a demand (its processes' declarations, setDemandFromProcesses).
    if (undeclared_.measuring(i) && (record.state != ClientState::Running || record.pid != running_[i].pid ||
                                     record.weightedDemand != 0 || record.peakDemand != 0))
      undeclared_.ended(i);
    if (record.state != ClientState::Running) continue;
    undeclared_.observe(i, held[i], now);
    records().observePeak(i, held[i]);
    if (running_[i].pid == record.pid)
      running_[i].observedPeak = std::max(running_[i].observedPeak, record.observedPeak);
  }
}

void NodeDaemon::countQueryLaunches(RunningQuery& query, std::uint64_t launches) {
  // The launches since the last count are the part of the query's run they
  // are (QueryWork), done on the device it was placed on.
  if (launches <= query.launches) return;
  if (query.device < deviceCounters_.size()) {
    const double work = work_.workOf(query.name, launches - query.launches);
    deviceCounters_[query.device].work += work;
    if (!work_.knows(query.name)) deviceCounters_[query.device].guessedWork += work;
  }
  query.launches = launches;
}

void NodeDaemon::observeAdmission() {
  // Sampled every liveness interval; the controllers decide once a window.
  NodeState& node = segment_->state();
  const double now = static_cast<double>(monotonicNanoseconds()) * 1e-9;
  std::vector<unsigned> running(devices_.size()), waiting(devices_.size()), workingSets(devices_.size());
  {
    RobustLock lock = lockNode();
    // The peak demand of each query running or waiting on a device: how many
    // of their working sets fit it together (AdaptiveSample::workingSetLimit).
    std::vector<std::vector<std::uint64_t>> peaks(devices_.size());
    const auto held = heldByQuery();
    const double demandNow = secondsNow(); // demandFor's clock
    // Each device's counters: what its freed records retired plus what its
    // live ones published. A client's last counters (published as it
    // leaves) are only in the retired part; counting deltas of live records
    // lost them, most of a short query's launches on the simulated device.
    std::vector<ClientActivity> totals(node.retiredOnDevice, node.retiredOnDevice + devices_.size());
    // Each running query's launches: its members that left plus the live ones.
    std::array<std::uint64_t, kMaxClients> queryLaunches{};
    for (std::uint32_t i = 0; i < kMaxClients; ++i) {
      const ClientRecord& record = node.clients[i];
      if (record.state == ClientState::Running) queryLaunches[i] += record.memberLaunches;
      if (record.state == ClientState::Memory && record.device < devices_.size()) {
        totals[record.device].addCounters(record.activity);
        if (record.querySlot < kMaxClients) queryLaunches[record.querySlot] += record.activity.launches;
      }
      const bool waits = record.state == ClientState::Waiting && record.admissionRequested != 0;
      const bool runs = record.state == ClientState::Running && record.device < devices_.size();
      if (!waits && !runs) continue;
      if (runs) ++running[record.device];
      const std::uint64_t peak = workingSetOf(record, i, held[i], demandNow);
      for (std::uint32_t device = 0; device < devices_.size(); ++device) {
        if (record.device != device && !(waits && record.device == kAnyDevice)) continue;
        if (waits) ++waiting[device];
        peaks[device].push_back(peak);
      }
    }
    for (std::uint32_t device = 0; device < devices_.size(); ++device) {
      DeviceCounters& counters = deviceCounters_[device];
      counters.launches = totals[device].launches;
      counters.evictions = totals[device].evictions;
      counters.evictionNanoseconds = totals[device].evictionNanoseconds;
      counters.bytesMoved = totals[device].bytesToDevice + totals[device].bytesToHost;
    }
    for (std::uint32_t device = 0; device < devices_.size(); ++device)
      workingSets[device] = workingSetLimit(std::move(peaks[device]), node.capacityOf(device));
    // The query is the one mqxd admitted in the slot.
    for (std::uint32_t i = 0; i < kMaxClients; ++i)
      if (node.clients[i].state == ClientState::Running && running_[i].pid != 0 &&
          running_[i].pid == node.clients[i].pid)
        countQueryLaunches(running_[i], queryLaunches[i]);
  }
  for (std::uint32_t device = 0; device < devices_.size(); ++device) {
    AdaptiveAdmission& controller = adaptive_[device];
    const unsigned before = limits_->perDevice[device];
    const auto decision = controller.observe(
        {now, deviceCounters_[device], running[device], waiting[device], work_.learned(), workingSets[device]});
    // Every sample: the room for one more moves between windows.
    limits_->perDevice[device] = controller.admissionLimit();
    if (!decision && controller.admissionLimit() != before)
      log(LogLevel::Info, "mqxd: adaptive admission{}: {} at most, not {}: {}",
          devices_.size() > 1 ? fmt::format(" on device {}", device) : std::string(), controller.admissionLimit(),
          before,
          controller.admissionLimit() >= controller.limit()
              ? fmt::format("no level below the limit {} evicts", controller.limit())
          : controller.noTwoWorkingSetsFit()
              ? std::string("no two of the queries' working sets fit the device together")
              : fmt::format("{} running evicted {:.3f} of the time", controller.admissionLimit(),
                            controller.evictionShareAt(controller.admissionLimit(), now).value_or(0)));
    if (!decision) continue;
    log(decision->limit != decision->before ? LogLevel::Info : LogLevel::Debug,
        "mqxd: adaptive admission{}: limit {} -> {}: {} ({:.1f} running, {:.3f} queries/s, {:.0f} launches/s, {:.0f} "
        "MB/s, {:.1f} "
        "evictions/s of {:.2f} ms, eviction share {:.3f}, work guessed {:.2f}; by level {})",
        devices_.size() > 1 ? fmt::format(" on device {}", device) : std::string(), decision->before, decision->limit,
        decision->why, decision->meanRunning, decision->throughput, decision->launchesPerSecond,
        decision->bytesPerSecond / 1e6, decision->evictionsPerSecond, decision->costPerEviction * 1e3,
        decision->evictionShare, decision->guessedShare, decision->levels);
    if (trace_) trace_->record(trace::counterEvent("adaptive limit", "queries", decision->limit));
  }
}

void NodeDaemon::traceDecision(const char* decision, const ClientRecord& record, std::uint64_t runningWeighted,
                               std::uint32_t device) {
  if (!trace_) return;
  // A query not placed yet shows the node's whole capacity and no device.
  trace::TraceEvent event = trace::instantEvent(decision, "admission", trace::kAdmissionTrack)
                                .argument("weighted_demand", record.weightedDemand)
                                .argument("peak_demand", record.peakDemand)
                                .argument("running_weighted_demand", runningWeighted)
                                .argument("capacity", segment_->state().capacityOf(device));
  if (device < devices_.size()) event.argument("device", device);
  trace_->record(event.withLabel(record.name));
}

void NodeDaemon::admitPostponed() {
  NodeState& node = segment_->state();
  std::vector<std::pair<pid_t, std::uint32_t>> admitted;
  {
    RobustLock lock = lockNode();
    std::vector<QueryDemand> running, waiting;
    std::vector<std::uint64_t> arrival(kMaxClients);
    // A running query's demand is updated as it runs: what it declared or,
    // when more, what its processes hold right now on its device (an
    // undeclared query's demand is what it holds).
    const auto held = heldByQuery();
    const double now = secondsNow();
    for (std::uint32_t i = 0; i < kMaxClients; ++i) {
      ClientRecord& record = node.clients[i];
      if (record.state == ClientState::Running) running.push_back(demandFor(record, i, held[i], now));
      if (record.state == ClientState::Waiting && record.admissionRequested != 0) {
        takeRequestedDemand(record);
        waiting.push_back(demandFor(record, i, 0, now));
        arrival[i] = record.arrival;
      }
    }
    if (waiting.empty()) return;
    std::sort(waiting.begin(), waiting.end(),
              [&](const QueryDemand& a, const QueryDemand& b) { return arrival[a.id] < arrival[b.id]; });
    std::vector<std::uint64_t> runningWeighted(devices_.size() + 1);
    for (const QueryDemand& query : running)
      runningWeighted[std::min<std::size_t>(query.device, devices_.size())] += query.weighted;
    const auto chosen = placement_.admit(running, waiting);
    for (const Placed& place : chosen) {
      ClientRecord& record = node.clients[place.id];
      records().admit(place.id, place.device);
      admitted.emplace_back(record.pid, place.id);
      ++queriesAdmitted_;
      ++queriesPlaced_[place.device];
      RunningQuery& query = running_[place.id];
      query = RunningQuery{record.pid, 0, {}, 0, place.device};
      std::memcpy(query.name, record.name, sizeof query.name);
      query.name[sizeof query.name - 1] = '\0';
      const bool undeclared =
          record.weightedDemand == 0 && record.peakDemand == 0 && config_.admission == AdmissionKind::Adaptive;
      if (undeclared) undeclared_.started(place.id, query.name, now);
      query.admittedPeak = record.peakDemand;
      log(LogLevel::Info, "mqxd: admitting query '{}' (pid {}, weighted demand {} MiB, peak {} MiB{}){}", record.name,
          record.pid, record.weightedDemand >> 20, record.peakDemand >> 20,
          undeclared ? ": declares nothing, counted as the whole device until measured" : "",
          devices_.size() > 1 ? fmt::format(" on device {} {}", place.device, devices_[place.device].identity)
                              : std::string());
      traceDecision("admitted", record, runningWeighted[place.device], place.device);
    }
    // A postponed query is counted (and traced) once per arrival, not on
    // every pass of the loop.
    for (const QueryDemand& query : waiting) {
      if (std::any_of(chosen.begin(), chosen.end(), [&](const Placed& place) { return place.id == query.id; }))
        continue;
      ClientRecord& record = node.clients[query.id];
      if (postponedArrival_[query.id] == record.arrival) continue;
      postponedArrival_[query.id] = record.arrival;
      ++postponements_;
      traceDecision("postponed", record, runningWeighted[std::min<std::size_t>(record.device, devices_.size())],
                    record.device);
    }
  }
  for (auto [pid, slot] : admitted)
    sendTo(names_.replyQueue(pid), Message::of(MessageKind::Admitted, getpid(), slot));
}

} // namespace mqx::daemon
