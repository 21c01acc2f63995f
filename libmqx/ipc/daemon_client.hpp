// DaemonClient: a process's membership of the node that mqxd runs. It claims
// a client record in the segment, owns the process's queues (replies; and,
// for a memory client, eviction requests, served by a thread) and frees the
// record on destruction. Two roles:
//  - Query: mqx-run's record, which asks for admission (paper §5);
//  - Memory: a process with a MemoryManager; its device memory is drawn from
//    the node budget (SharedDeviceBudget) and other processes may ask it to
//    evict (docs/architecture.md decision 8: only the owner's context can unmap).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/weighted_demand.hpp"
#include "config/config.hpp"
#include "core/device_budget.hpp"
#include "core/peer_regions.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/node_state.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::ipc {

class DaemonClient : public std::enable_shared_from_this<DaemonClient> {
public:
  enum class Role { Query, Memory };
  // Frees up to the given bytes of this process's device memory for another
  // process; returns the bytes freed.
  using Evictor = std::function<std::size_t(std::size_t)>;
  // The same, preferring the named region (one of this process's RegionIds,
  // 0 for none): global victim selection names the victim.
  using RegionEvictor = std::function<std::size_t(std::size_t bytes, std::uint64_t region)>;
  // This process's activity now, or nullopt when it cannot be read without
  // waiting (the manager is busy): called on the eviction-serving thread,
  // which must never block on the manager (the manager may hold its lock
  // while it waits for acknowledgements that this thread sends).
  using ActivitySource = std::function<std::optional<ClientActivity>()>;

  // Null when no daemon runs for this user and instance (then the process
  // works alone). Throws std::runtime_error when the node is full.
  static std::shared_ptr<DaemonClient> connect(const Config& config, Role role, const std::string& name = {});
  ~DaemonClient();
  DaemonClient(const DaemonClient&) = delete;
  DaemonClient& operator=(const DaemonClient&) = delete;

  // Stops serving and frees the record (idempotent; the destructor does it).
  // The budget refuses and ignores everything afterwards: a process leaving
  // at exit may still free device memory while its context is torn down.
  void leave();

  std::uint32_t slot() const { return slot_; }
  NodeState& node() { return segment_->state(); }
  const IpcNames& names() const { return names_; }
  const Config& config() const { return config_; }
  bool daemonAlive();

  // Memory role: the node budget, drawn through this client's record (the
  // budget keeps the client alive).
  std::shared_ptr<DeviceBudget> budget();
  // Installs (or, with nullptr, removes) what serves eviction requests.
  void setEvictor(Evictor evictor);
  void setRegionEvictor(RegionEvictor evictor);
  // Memory role: installs what the record's activity is read from; it is
  // published at most every 100 ms (with the heartbeat) and once more when
  // the source is replaced or removed (call with nullptr before the
  // manager goes: its last counters reach the node) and when the client
  // leaves.
  void setActivitySource(ActivitySource source);
  // Asks other memory clients, largest holder first, to free `bytes`, again
  // and again while the node makes progress (docs/daemon.md, "Queue or
  // evict, never abort"): Freed when some bytes were freed (or the node has
  // room); MustYield at once when an older client also waits for memory;
  // NobodyElseHolds when no other live client holds any budget; NoProgress
  // when nothing changed on the node (progress()) for
  // stallLimit(daemon.eviction_timeout_ms).
  PeerReclaim requestEviction(std::size_t bytes);
  // A fingerprint of the other clients' progress (PeerRegions::progress).
  std::uint64_t progress();
  // The other clients that hold budget or wait for memory, largest first,
  // in one line.
  std::string describeNode();
  // Asks the client in `ownerSlot` to evict `region` (or its best
  // alternative) for `bytes`; waits for its acknowledgement at most
  // daemon.eviction_timeout_ms. The bytes it freed.
  std::size_t requestEvictionOf(std::uint32_t ownerSlot, std::uint64_t region, std::size_t bytes);
  // Whether another live memory client of older arrival waits for memory.
  bool mustYield();

  // Query role: declares the demand and waits until mqxd admits the query.
  // False when the daemon went away meanwhile.
  bool waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand);
  // The same, bounded and never silent (docs/daemon.md, "Waiting for
  // admission"): gives up after `timeout` (0: no limit), withdrawing the
  // request, and calls `report` with one line saying why the query waits
  // and for whom (describeAdmissionWait) once it has waited 0.2 s, then
  // every `reportInterval` (after the first 12, an unchanged reason only
  // every 12 intervals).
  enum class Admission { Admitted, DaemonGone, TimedOut };
  struct AdmissionWait {
    std::chrono::seconds timeout{0};
    std::chrono::milliseconds reportInterval{5000};
    std::function<void(const std::string& why)> report;
  };
  Admission waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand, const AdmissionWait& wait);
  // Why the query still waits (describeAdmissionWait), for the last words of
  // a query that gives up.
  std::string admissionWaitReason();
  // Reports the end of the query (with the most device bytes its processes
  // held at once, for learned demand).
  void finishQuery();

  // Either role: the query's demand changed while it runs (paper §5: a
  // query's demand is updated as it executes). Sends DemandUpdate for the
  // query record: this client's own (Query role) or the query this process
  // runs for (Memory role, MQX_QUERY_SLOT); mqxd re-runs admission. False
  // when there is no query record to update or mqxd cannot be reached.
  bool updateDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand);
  // Memory role, the advice API (mqx_declare_operator): one more operator of
  // the running query's plan, expected to take `seconds` with `bytes` of
  // device memory. Sends the plan's demand so far: weighted
  // m = Σ tᵢmᵢ / Σ tᵢ and peak max mᵢ (paper §5). False for a bad operator
  // or when there is no query record to update.
  bool declareOperator(double seconds, std::uint64_t bytes);
  // Memory role, the launch path: the device bytes a launch references.
  // While the query declared no operator, each daemon.demand_report_interval_ms
  // counts as one operator whose memory is the most one launch in it
  // referenced; the weighted demand Σ tᵢmᵢ / Σ tᵢ over them and their peak
  // are sent when they changed: the demand follows what the query's kernels
  // actually use (docs/daemon.md, "Demand as the query runs").
  void observeLaunchFootprint(std::uint64_t bytes);

private:
  DaemonClient(const Config& config, Role role) : config_(config), role_(role) {}
  void serveEvictions();
  // Publishes what the source says now (nothing when it is busy or unset).
  void publishActivity();
  void setBlocked(bool blocked);
  // Sends one request and waits for its acknowledgement until `answerBy`;
  // nullopt when none came.
  std::optional<std::size_t> askToEvict(pid_t owner, std::uint64_t region, std::size_t bytes,
                                        std::chrono::steady_clock::time_point answerBy);

  // Whether this is the process that joined (not a fork() child of it, which
  // inherits the object but neither the record, the queues nor the thread).
  bool inJoiningProcess() const { return getpid() == joinedAs_; }

  Config config_;
  Role role_;
  pid_t joinedAs_ = getpid();
  IpcNames names_;
  std::unique_ptr<SharedSegment> segment_;
  std::uint32_t slot_ = kNoSlot;
  std::unique_ptr<MessageQueue> replies_;
  std::unique_ptr<MessageQueue> evictions_;
  std::thread server_;
  std::atomic<bool> stopping_{false};
  std::mutex evictorMutex_;
  RegionEvictor evictor_;
  std::mutex activityMutex_;
  ActivitySource activitySource_;
  // Eviction requests refused so far (the serving thread's).
  std::uint64_t refusedRequests_ = 0;
  std::mutex requestMutex_; // one outstanding eviction request per process
  std::uint64_t nextSequence_ = 1;
  // Demand of the query as declared (advice API) and observed (launches).
  std::mutex demandMutex_;
  WeightedDemand declaredDemand_;
  std::atomic<bool> declared_{false};
  std::uint64_t windowFootprint_ = 0; // the current interval's largest launch
  std::chrono::steady_clock::time_point windowStart_{};
  WeightedDemand observedDemand_; // the closed intervals
  std::uint64_t reportedWeighted_ = 0;
  std::uint64_t reportedPeak_ = 0;
};

} // namespace mqx::ipc
