// The fusion planner of Kernel Weaver (MICRO 2012, §4): which operators of a
// query plan to fuse into one kernel.
//
//   1. Candidates (§4.1, Algorithm 1): operators joined by thread or CTA
//      dependences, bounded by kernel dependences. Kernel-dependence edges are
//      removed and every connected set of two or more operators left is a
//      candidate set.
//   2. Grouping (§4.2, Algorithm 2): within each candidate set, operators in
//      topological order are added to the current group while the fused
//      estimate (§4.3.3) stays within the per-CTA register and shared-memory
//      budget; the first that does not fit starts the next group.
//
// mqx adds two legality checks the paper's examples never trigger: a group
// never holds both ends of a kernel dependence, and never a producer and a
// consumer connected through an operator outside the group (the fused kernel
// would have to run both before and after it).
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/operator_graph.hpp"
#include "kernelopt/resource.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace mqx::kernelopt {

struct FusionBudget {
  int registersPerThread = 0;
  int sharedMemoryPerCta = 0; // bytes, without the driver's reserve
};

// The largest per-CTA budget that still keeps `ctasPerSm` CTAs of
// `threadsPerCta` threads resident, by the occupancy model. Throws
// std::invalid_argument when the warp or block slots alone cannot.
FusionBudget fusionBudgetFor(const DeviceLimits &limits, int threadsPerCta, int ctasPerSm);

// Resources of a fused operator (Kernel Weaver §4.3.3). Stages run one after
// another and reuse registers, so registers are the largest operator's plus
// those that carry intermediate data between fused operators. Shared memory
// is not reused across stages (a conservative reading): the operators' own
// plus the buffers of fused CTA dependences.
struct FusedEstimate {
  int registersPerThread = 0;
  int sharedMemoryPerCta = 0;
};

FusedEstimate estimateFused(const OperatorGraph &graph, std::span<const std::size_t> operators);

// Why a group ends where it does.
enum class GroupEnd {
  KernelDependence, // the operator is in no candidate set: it runs alone
  EndOfCandidates,  // the candidate set has no more operators
  Budget,           // the next operator would break the budget (see `exceeded`)
  Ordering,         // the next operator depends on the group through an outside operator
  Dependence,       // the next operator has a kernel dependence with the group
  OverBudget,       // the operator alone breaks the budget: it runs unfused
};

struct FusionGroup {
  std::vector<std::size_t> operators; // topological order
  FusedEstimate estimate;
  GroupEnd end = GroupEnd::EndOfCandidates;
  ResourceSet exceeded; // with GroupEnd::Budget / OverBudget
};

struct FusionPlan {
  // Algorithm 1's candidate sets, each in topological order.
  std::vector<std::vector<std::size_t>> candidates;
  // Every operator in exactly one group; groups in topological order of
  // their first operator.
  std::vector<FusionGroup> groups;
};

std::vector<std::vector<std::size_t>> fusionCandidates(const OperatorGraph &graph);

FusionPlan planFusion(const OperatorGraph &graph, const FusionBudget &budget);

} // namespace mqx::kernelopt
