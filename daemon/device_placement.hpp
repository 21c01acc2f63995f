// DevicePlacement: which of the node's devices each postponed query starts
// on (docs/daemon.md, "Several GPUs"), as a pure function of the devices'
// capacities, the running queries and the postponed ones in arrival order,
// plus the round-robin turn it keeps. Admission (AdmissionPolicy: Weight,
// Peak, FIX-n; paper §5) is per device; placement chooses among the devices
// where a query is admitted:
//  - demand: the device with the most room left after its demand and the
//    demands of the queries already running there (ties: the lowest index);
//  - round-robin: the devices in turn, blind to demand (the baseline);
//  - a query that asked for a device (mqx-run --device) goes there only.
// Arrival order holds per device: a postponed query keeps every later one
// off the devices it waits for (all of them when it was not placed), so
// none starves. On a node of one device this is AdmissionPolicy::admit.
#pragma once

#include <cstdint>
#include <vector>

#include "admission_policy.hpp"
#include "config/config_choices.hpp"

namespace mqx::daemon {

struct Placed {
  std::uint32_t id = 0;
  std::uint32_t device = 0;
  bool operator==(const Placed&) const = default;
};

class DevicePlacement {
public:
  // `policy` (its capacity unused: each device has its own).
  DevicePlacement(const AdmissionPolicy& policy, PlacementKind kind, std::vector<std::uint64_t> capacities)
      : policy_(policy), kind_(kind), capacities_(std::move(capacities)) {}

  // The queries of `waiting` (arrival order; `device` the one asked for, or
  // ipc::kAnyDevice) that start now and where. `running` carries each
  // running query's device. A query that names a device the node lacks is
  // never placed.
  std::vector<Placed> admit(const std::vector<QueryDemand>& running, const std::vector<QueryDemand>& waiting);

  // The device a query started before its admission waits for and then runs
  // on, chosen when it arrives (ClientRecord::placeOnArrival): where it is
  // likely to start first. `bound` are the queries already on a device
  // (running, or waiting for one). Demand placement: the most room left after
  // the bound queries' demands and its own; among equals (queries that
  // declare nothing) the device with the fewest bound queries, then the
  // lowest index. Round-robin: the next turn. A query that asked for a
  // device keeps it.
  std::uint32_t placeOnArrival(const std::vector<QueryDemand>& bound, const QueryDemand& query);

  std::uint32_t deviceCount() const { return static_cast<std::uint32_t>(capacities_.size()); }

private:
  AdmissionPolicy policy_;
  PlacementKind kind_;
  std::vector<std::uint64_t> capacities_;
  std::uint32_t nextTurn_ = 0; // round-robin: the device of the next query it places
};

} // namespace mqx::daemon
