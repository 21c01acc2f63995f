// NodeDaemon: what mqxd is. It owns the node's segment and request queue,
// registers clients (they claim records in the segment), reclaims the budget
// of clients that died (docs/architecture.md decision 9: within one liveness
// interval, 100 ms by default), and admits queries (decision 10, paper §5)
// on the node's devices (node_admission.cpp).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adaptive_admission.hpp"
#include "admission_policy.hpp"
#include "common/files.hpp"
#include "config/config.hpp"
#include "declared_demand.hpp"
#include "demand_history.hpp"
#include "device_placement.hpp"
#include "ipc/client_records.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/shared_segment.hpp"
#include "launch_service.hpp"
#include "metrics_exporter.hpp"
#include "mps_control.hpp"
#include "query_work.hpp"
#include "trace/trace_recorder.hpp"
#include "undeclared_demand.hpp"

namespace mqx::daemon {

// The most a demand may be (daemon.capacity's own limit): a larger value in
// a message is refused, never added up.
inline constexpr std::uint64_t kMaxDemandBytes = std::uint64_t{1} << 50;

// The segment is no longer a node state (someone wrote over it): mqxd
// refuses it and exits (docs/hardening.md, "Faults and bad inputs tried").
struct SegmentDamaged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The instance's lock (flock on IpcNames::lockFile), held for mqxd's life:
// one mqxd per user and instance; of two started at the same instant, one
// gets it. Throws std::runtime_error naming the mqxd that runs.
FileDescriptor lockInstance(const ipc::IpcNames& names);

// What mqxd hands NodeDaemon besides the configuration.
struct NodeDaemonOptions {
  // The instance's lock when mqxd took it first (lockInstance), else
  // NodeDaemon takes it. mqxd takes it before its host block pool, so that
  // a second mqxd refuses before it pins host memory beside the first.
  FileDescriptor instanceLock;
};

class NodeDaemon {
public:
  // Creates the segment and queue; throws std::runtime_error when another
  // mqxd of this user and instance is alive.
  explicit NodeDaemon(const Config& config, NodeDaemonOptions options = {});
  ~NodeDaemon();

  // Serves until `stop` becomes true (checked at least every liveness
  // interval, also while it waits for the node lock); the destructor then
  // removes the segment and queue. Throws SegmentDamaged, naming the
  // segment and what is wrong in one line, when the segment was written
  // over.
  void run(const std::atomic<bool>& stop);

  // The node's devices as the segment lists them (docs/daemon.md, "Several GPUs").
  const std::vector<ipc::DeviceEntry>& devices() const { return devices_; }
  const ipc::IpcNames& names() const { return names_; }

  // Acts on one message that passed validMessage(); nothing in it is trusted
  // beyond that (the segment is the truth). Public for the message fuzzer
  // (tests/fuzz), which drives it directly.
  void handle(const ipc::Message& message);

  // The node as the metrics show it (takes the segment lock).
  NodeMetrics metrics();
  std::uint64_t messagesRefused() const { return messagesRefused_; }

private:
  // The node lock, waited for in slices of 100 ms: between them the segment's
  // header is checked (SegmentDamaged) and a stop request ends the wait
  // (StopRequested), so that SIGTERM always works; a wait of more than 2 s
  // is logged once with the holder.
  struct StopRequested {};
  ipc::RobustLock lockNode();
  void checkSegment(); // throws SegmentDamaged
  // The node's client records, through the transitions that change them.
  ipc::ClientRecords records() { return ipc::ClientRecords(segment_->state()); }
  void reclaimDeadClients();
  // Stale queues (docs/daemon.md, "Queues of dead clients"): the queues of
  // `pids` that are dead go; the live ones are kept in orphans_ and checked
  // on every liveness pass.
  void removeQueuesOfDead(const std::vector<pid_t>& pids);
  std::vector<pid_t> previousClients(); // of a crashed mqxd's segment and of the roster file
  void writeRoster();                   // at shutdown: the clients still alive
  void reportStoppedHolders();
  void setDemandFromProcesses(ipc::NodeState& node, std::uint32_t querySlot);
  // A waiting query's request as mqxd first sees it: whether it declared a
  // demand (DeclaredDemands), else the demand learned under its name.
  void takeRequestedDemand(ipc::ClientRecord& record);
  // DemandUpdate and FootprintUpdate: the demand of the query `message`'s
  // sender runs for. A footprint does not replace a declared demand.
  void updateDemand(const ipc::Message& message);
  QueryDemand demandFor(const ipc::ClientRecord& record, std::uint32_t slot, std::uint64_t held, double now);
  [[nodiscard]] std::uint64_t workingSetOf(const ipc::ClientRecord& record, std::uint32_t slot, std::uint64_t held,
                                           double now);
  static double secondsNow() { return static_cast<double>(ipc::monotonicNanoseconds()) * 1e-9; }
  void observeQueries();
  // The bytes each query's processes hold now on the device it runs on.
  std::array<std::uint64_t, ipc::kMaxClients> heldByQuery();
  void admitPostponed();
  // Places the waiting queries that asked to be placed on arrival
  // (ClientRecord::placeOnArrival) on a device, before their admission.
  void placeArrivals();
  // Adaptive admission (docs/daemon.md, "Adaptive admission"): each device's
  // counters (the sum of its clients' published activity) and queries, fed
  // to its controller every liveness interval; a decision sets the device's
  // limit, which admitPostponed's policy reads.
  void observeAdmission();
  // A message that is not from the registered client of the record it
  // names, or carries an out-of-range value: counted and logged (at most
  // one line a second, with the count of those not logged).
  void refuse(const ipc::Message& message, const char* why);
  void traceNode(); // counter samples of the node (tracing on)
  void traceDecision(const char* decision, const ipc::ClientRecord& record, std::uint64_t runningWeighted,
                     std::uint32_t device);

  Config config_;
  ipc::IpcNames names_;
  ipc::IpcNames previousNames_; // the names the previous mqxd's clients used (their queues)
  FileDescriptor instanceLock_; // flock: one mqxd per user and instance
  std::vector<ipc::DeviceEntry> devices_;
  std::shared_ptr<ConcurrencyLimits> limits_; // before placement_, whose policy reads it
  DevicePlacement placement_;
  DemandHistory history_;
  DeclaredDemands declared_;    // queries whose demand their launches' footprints do not replace
  UndeclaredDemand undeclared_; // queries that declare nothing and were never learned
  QueryWork work_;              // launches per run of each query name (adaptive admission's unit)
  std::unique_ptr<ipc::SharedSegment> segment_;
  std::unique_ptr<ipc::MessageQueue> requests_;
  LaunchService launches_;
  // Observability (docs/hardening.md): mqxd's trace (admission decisions)
  // and metrics.
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<MetricsExporter> metrics_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::uint64_t queriesAdmitted_ = 0;
  std::uint64_t queriesPlaced_[ipc::kMaxDevices] = {}; // admitted on each device, total
  std::uint64_t postponements_ = 0;
  std::uint64_t postponedArrival_[ipc::kMaxClients] = {}; // the arrival last traced as postponed, per slot
  std::uint64_t messagesRefused_ = 0;
  std::uint64_t refusalsNotLogged_ = 0;
  std::chrono::steady_clock::time_point lastRefusalLog_{};
  // A running query's name and the most its processes held (observeQueries),
  // kept by mqxd itself: QueryFinished arrives after the record is freed and
  // its name and bytes are not trusted; the demand learned is this.
  struct RunningQuery {
    pid_t pid = 0;
    std::uint64_t observedPeak = 0;
    char name[ipc::kQueryNameBytes] = {};
    std::uint64_t launches = 0;             // its processes' launches counted so far (observeAdmission)
    std::uint32_t device = ipc::kAnyDevice; // where it was placed
    // The peak demand it was admitted with where it declared or learned one
    // (0: it declared nothing): workingSetOf's floor while it runs.
    std::uint64_t admittedPeak = 0;
  };
  RunningQuery running_[ipc::kMaxClients];
  // Adds the work of a running query's launches up to `launches` (its
  // members' total) to its device's counters.
  void countQueryLaunches(RunningQuery& query, std::uint64_t launches);
  // Adaptive admission: a controller per device, and each device's counters
  // at the last sample (observeAdmission).
  std::vector<AdaptiveAdmission> adaptive_;
  std::vector<DeviceCounters> deviceCounters_;
  const std::atomic<bool>* stop_ = nullptr; // run()'s
  bool segmentDamaged_ = false;
  bool shuttingDown_ = false;  // lockNode gives up after 1 s
  std::string rosterPath_;     // IpcNames::rosterFile
  std::vector<pid_t> orphans_; // live processes with queues of this node and no record in this segment
  pid_t stoppedReported_[ipc::kMaxClients] = {}; // the pid last reported stopped, per slot
  std::unique_ptr<MpsControl> mps_;              // last: started once the node is set up, stopped first
};

} // namespace mqx::daemon
