// DeclaredDemands: which queries declared their demand, per request (slot and
// arrival), so that what their processes' launches show does not replace it
// (docs/daemon.md, "Demand as the query runs").
//
// Why: a launch footprint (AdmissionClient::observeLaunchFootprint, the most
// bytes one launch referenced in an interval) says what a query's kernels
// reference, not what it keeps resident between them. A declared plan
// (mqx-run --plan, the advice API) is the demand the paper's Weight and Peak
// admit by (paper §5: each operator's declared memory). On the H200 the
// three SSB queries running in the traced open run (open-trace-gpu-H200-
// 87736a0) counted 2.94 GB of footprints against the 3.70 GB they declared,
// so Weight and Peak over-admitted. A query that declared nothing keeps
// taking its demand from its footprints.
#pragma once

#include <array>
#include <cstdint>

#include "ipc/node_state.hpp"

namespace mqx::daemon {

class DeclaredDemands {
public:
  // mqxd sees the request of the query in `slot` (its `arrival`); the first
  // time per arrival, whether it asked with a demand (a plan) or with none
  // (mqxd may then learn one: that is not a declaration).
  void requested(std::uint32_t slot, std::uint64_t arrival, bool withDemand) {
    Request& request = requests_[slot];
    if (request.arrival == arrival) return;
    request = Request{arrival, withDemand};
  }
  // The query, or one of its processes (the advice API), declared operators.
  void declared(std::uint32_t slot, std::uint64_t arrival) { requests_[slot] = Request{arrival, true}; }
  [[nodiscard]] bool isDeclared(std::uint32_t slot, std::uint64_t arrival) const {
    return requests_[slot].arrival == arrival && requests_[slot].declared;
  }

private:
  struct Request {
    std::uint64_t arrival = 0; // 0: none seen (arrivals start at 1)
    bool declared = false;
  };
  std::array<Request, ipc::kMaxClients> requests_{};
};

} // namespace mqx::daemon
