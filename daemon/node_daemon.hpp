// NodeDaemon: what mqxd is. It owns the node's segment and request queue,
// registers clients (they claim records in the segment), reclaims the budget
// of clients that died (ARCHITECTURE.md decision 9: within one liveness
// interval, 100 ms by default), and admits queries (decision 10, paper §5).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "admission_policy.hpp"
#include "config/config.hpp"
#include "demand_history.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/shared_segment.hpp"
#include "launch_service.hpp"
#include "metrics_exporter.hpp"
#include "mps_control.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx::daemon {

class NodeDaemon {
public:
  // Creates the segment and queue; throws std::runtime_error when another
  // mqxd of this user and instance is alive.
  explicit NodeDaemon(const Config& config);
  ~NodeDaemon();

  // Serves until `stop` becomes true (checked at least every liveness
  // interval); the destructor then removes the segment and queue.
  void run(const std::atomic<bool>& stop);

  std::uint64_t capacity() const { return capacity_; }
  const ipc::IpcNames& names() const { return names_; }

  // Acts on one message that passed validMessage(); nothing in it is trusted
  // beyond that (the segment is the truth). Public for the message fuzzer
  // (tests/fuzz), which drives it directly.
  void handle(const ipc::Message& message);

  // The node as the metrics show it (takes the segment lock).
  NodeMetrics metrics();
  std::uint64_t messagesRefused() const { return messagesRefused_; }

private:
  void reclaimDeadClients();
  void setDemandFromProcesses(ipc::NodeState& node, std::uint32_t querySlot);
  void applyLearnedDemand(ipc::ClientRecord& record);
  void observeQueries();
  std::array<std::uint64_t, ipc::kMaxClients> heldByQuery();
  void admitPostponed();
  // A message that is not from the registered client of the record it
  // names, or carries an out-of-range value: counted and logged (at most
  // one line a second, with the count of those not logged).
  void refuse(const ipc::Message& message, const char* why);
  void traceNode(); // counter samples of the node (tracing on)
  void traceDecision(const char* decision, const ipc::ClientRecord& record, std::uint64_t runningWeighted);

  Config config_;
  ipc::IpcNames names_;
  std::uint64_t capacity_ = 0;
  AdmissionPolicy policy_;
  DemandHistory history_;
  std::unique_ptr<ipc::SharedSegment> segment_;
  std::unique_ptr<ipc::MessageQueue> requests_;
  LaunchService launches_;
  // Observability (docs/hardening.md): mqxd's trace (admission decisions)
  // and metrics.
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<MetricsExporter> metrics_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::uint64_t queriesAdmitted_ = 0;
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
  };
  RunningQuery running_[ipc::kMaxClients];
  std::unique_ptr<MpsControl> mps_; // last: started once the node is set up, stopped first
};

} // namespace mqx::daemon
