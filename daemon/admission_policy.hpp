// AdmissionPolicy: the query scheduler's decision, as a pure function (paper
// §5). Given the node capacity, the running queries and the postponed ones
// in arrival order, which postponed queries start now:
//  - Adaptive (the default): at most the device's concurrency limit runs
//    (AdaptiveAdmission sets it from what the node measures: docs/daemon.md,
//    "Adaptive admission"), and a query starts only when Weight's memory
//    check (below) lets it and, with `peakOvercommit` set, when its peak
//    and the running queries' peaks sum to at most that many capacities;
//  - Weight: a query starts when its weighted demand m = Σ tᵢmᵢ / Σ tᵢ fits
//    in the capacity minus the running queries' weighted demands;
//  - Peak: the same with peak demands (no oversubscription at all);
//  - FIX-n: at most n queries run, whatever their demands.
// Postponed queries are served strictly in arrival order: a later, smaller
// query never overtakes an earlier one, so none starves. A query that does
// not fit even on an idle node starts when nothing else runs.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.hpp"

namespace mqx::daemon {

struct QueryDemand {
  std::uint32_t id = 0;
  std::uint64_t weighted = 0;
  std::uint64_t peak = 0;
  // The node device (DevicePlacement): a running query's, a waiting one's
  // if it asked for one; ipc::kAnyDevice otherwise.
  std::uint32_t device = 0xffffffffu;
};

// Adaptive admission's limit per device, shared between the daemon's
// controllers (which set it) and every copy of the policy (which reads it).
struct ConcurrencyLimits {
  static constexpr std::size_t kDevices = 16; // ipc::kMaxDevices
  std::array<unsigned, kDevices> perDevice{};
  unsigned of(std::uint32_t device) const { return perDevice[device < kDevices ? device : 0]; }
};

struct AdmissionPolicy;

// What runs on one device, as admission counts it.
struct DeviceLoad {
  std::size_t count = 0;
  std::uint64_t demand = 0; // AdmissionPolicy::demandOf each, summed
  std::uint64_t peaks = 0;  // their peaks, summed
  void add(const AdmissionPolicy& policy, const QueryDemand& query);
};

struct AdmissionPolicy {
  AdmissionKind kind = AdmissionKind::Adaptive;
  unsigned fixN = 2;
  std::uint64_t capacity = 0;
  // Adaptive: each device's limit; without it, Adaptive is Weight.
  std::shared_ptr<const ConcurrencyLimits> limits;
  // Adaptive: a query starts beside others only where its peak and theirs
  // sum to at most this many times the device's capacity (0: no such
  // check). Why peaks beyond the capacity at all: SSB's scans stream their
  // columns, so what a query needs resident at once is less than its peak,
  // and on the GPU FIX-3 matched or beat FIX-2 where its three peaks summed
  // to 1.05-1.06 capacities over time, and lost by 6-19% where they summed
  // to 1.13-1.17 (every committed call that ran both, `open-runs`:
  // docs/daemon.md, "Peaks beside the limit"). 0 until measured to pay.
  double peakOvercommit = 0;

  // The ids of `waiting` to start, a prefix of it (a node of one device, 0).
  [[nodiscard]] std::vector<std::uint32_t> admit(const std::vector<QueryDemand>& running,
                                                 const std::vector<QueryDemand>& waiting) const;
  [[nodiscard]] std::uint64_t demandOf(const QueryDemand& query) const;
  // Whether `query` starts on device `device` of `deviceCapacity` where
  // `running` runs.
  [[nodiscard]] bool fits(const DeviceLoad& running, const QueryDemand& query, std::uint64_t deviceCapacity,
                          std::uint32_t device = 0) const;
};

} // namespace mqx::daemon
