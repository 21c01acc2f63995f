// AdmissionClient: a query's dealings with mqxd's admission (paper §5), over
// the node membership of a process of that query (it uses the membership's
// record and reply queue, and keeps the membership alive):
//  - with a query record (NodeMembership::Role::Query: mqx-run, mqx.Client)
//    it declares the query's demand, asks for admission and waits (bounded
//    and never silent), and reports the query's end for learned demand;
//  - with a memory client (libmqx.so, SimDevice) it updates the demand of the
//    query that process runs for (MQX_QUERY_SLOT) as the query declares its
//    plan (advice API) or as its launches show it (observed demand).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/weighted_demand.hpp"
#include "config/config_choices.hpp"
#include "ipc/node_membership.hpp"

namespace mqx::ipc {

// How admission is described and how often observed demand is reported
// (daemon.* in configs/default.toml, whose defaults these are).
struct AdmissionOptions {
  AdmissionKind admission = AdmissionKind::Weight; // daemon.admission: why a query waits
  unsigned admissionFixN = 2;                      // daemon.admission_fix_n
  unsigned demandReportIntervalMilliseconds = 100; // daemon.demand_report_interval_ms
  // How long declareDemand and the admission wait wait for the node's lock
  // (mqx.Client: a live process that keeps it is an error, never a hang:
  // docs/python.md). None: as long as it takes (a holder that dies gives it
  // back: RobustMutex).
  std::optional<std::chrono::milliseconds> nodeLockTimeout;
};

class AdmissionClient {
public:
  // Joins the node as a query named `name` (a Waiting record). Null when no
  // daemon runs for this user and instance; throws std::runtime_error when
  // the node is full.
  static std::shared_ptr<AdmissionClient> connect(const NodeOptions& node, const AdmissionOptions& options,
                                                  const std::string& name);
  AdmissionClient(std::shared_ptr<NodeMembership> membership, const AdmissionOptions& options)
      : membership_(std::move(membership)), options_(options) {}
  AdmissionClient(const AdmissionClient&) = delete;
  AdmissionClient& operator=(const AdmissionClient&) = delete;

  NodeMembership& membership() { return *membership_; }

  // Query role: writes the demand into the record without asking for
  // admission yet (mqxd admits only records that asked). False when the
  // record is no longer this process's or the lock was not had within
  // nodeLockTimeout.
  bool declareDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand);

  // Query role: declares the demand, asks mqxd to admit the query and waits
  // until it does. False when the daemon went away meanwhile.
  bool waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand);
  // The same, bounded and never silent (docs/daemon.md, "Waiting for
  // admission"): gives up after `timeout`, withdrawing the request, and
  // calls `report` with one line saying why the query waits and for whom
  // (describeAdmissionWait) once it has waited 0.2 s, then every
  // `reportInterval` (after the first 12, an unchanged reason only every 12
  // intervals). `poll` runs at least every `pollInterval`; when it answers
  // false the wait ends (Stopped: mqx-run's program ended meanwhile). It may
  // also throw (mqx.Client: Python's signals). Either way the caller then
  // withdraws the query by leaving the node.
  enum class Admission {
    Admitted,
    DaemonGone,
    TimedOut,
    Reclaimed,  // the record is no longer this process's (mqxd reclaimed it)
    NodeLocked, // a live process kept the node's lock past nodeLockTimeout
    Stopped,    // `poll` ended the wait
  };
  struct AdmissionWait {
    std::optional<std::chrono::milliseconds> timeout; // none: no limit
    std::chrono::milliseconds reportInterval{5000};
    std::function<void(const std::string& why)> report;
    std::chrono::milliseconds pollInterval{200};
    std::function<bool()> poll; // false: stop waiting
  };
  Admission waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand, const AdmissionWait& wait);
  // Why the query still waits (describeAdmissionWait), for the last words of
  // a query that gives up.
  std::string admissionWaitReason();
  // Query role: the most device bytes the query's processes held at once.
  std::uint64_t observedPeak();
  // Query role, once admitted: the node device mqxd placed the query on (or
  // the one it asked for: NodeOptions::device), which the query's processes
  // are to use (docs/daemon.md, "Several GPUs"). nullopt before admission or
  // when the record is no longer this process's.
  struct PlacedDevice {
    std::uint32_t index = 0;
    std::string identity;          // a GPU's UUID or "sim-<n>"
    std::uint32_t deviceCount = 0; // the node's
  };
  std::optional<PlacedDevice> placedDevice();
  // Query role, a query started before its admission: declares the demand,
  // asks for admission and for a device now (ClientRecord::placeOnArrival),
  // and waits, at most `timeout`, until mqxd has placed the query (or
  // admitted it). The device, or nullopt when mqxd did not place it in time,
  // went away, or the record is no longer this process's.
  std::optional<PlacedDevice> requestPlacement(std::uint64_t weightedDemand, std::uint64_t peakDemand,
                                               std::chrono::milliseconds timeout);
  // Reports the end of the query (with observedPeak, for learned demand) and
  // frees its record.
  void finishQuery();

  // Either role: the query's demand changed while it runs (paper §5: a
  // query's demand is updated as it executes). Sends DemandUpdate for the
  // query record: the membership's own (Query role) or the query this
  // process runs for (Memory role, MQX_QUERY_SLOT); mqxd re-runs admission.
  // False when there is no query record to update or mqxd cannot be reached.
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
  // are sent (FootprintUpdate) when they changed: the demand of a query that
  // declared none follows what its kernels actually use (docs/daemon.md,
  // "Demand as the query runs").
  void observeLaunchFootprint(std::uint64_t bytes);

private:
  bool sendDemand(MessageKind kind, std::uint64_t weightedDemand, std::uint64_t peakDemand);
  std::shared_ptr<NodeMembership> membership_;
  AdmissionOptions options_;
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
