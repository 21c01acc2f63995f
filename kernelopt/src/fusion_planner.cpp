#include "kernelopt/fusion_planner.hpp"

#include "kernelopt/allocation.hpp"
#include "kernelopt/occupancy.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>

namespace mqx::kernelopt {

namespace {

// Union-find over operators, for the connected sets of Algorithm 1.
class DisjointSets {
public:
  explicit DisjointSets(std::size_t count) : parent_(count) { std::iota(parent_.begin(), parent_.end(), 0); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x)
      x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }

private:
  std::vector<std::size_t> parent_;
};

// reachable[a][b]: b is a (transitive) consumer of a.
std::vector<std::vector<bool>> reachability(const OperatorGraph &graph, const std::vector<std::size_t> &order) {
  std::vector<std::vector<std::size_t>> consumers(graph.size());
  for (const DependenceEdge &edge : graph.edges())
    consumers[edge.producer].push_back(edge.consumer);
  std::vector<std::vector<bool>> reachable(graph.size(), std::vector<bool>(graph.size(), false));
  for (auto op = order.rbegin(); op != order.rend(); ++op)
    for (std::size_t next : consumers[*op]) {
      reachable[*op][next] = true;
      for (std::size_t far = 0; far < graph.size(); ++far)
        if (reachable[next][far])
          reachable[*op][far] = true;
    }
  return reachable;
}

// State shared by the steps of Algorithm 2 over one graph.
class GroupBuilder {
public:
  GroupBuilder(const OperatorGraph &graph, const FusionBudget &budget, const std::vector<std::size_t> &order)
      : graph_(graph), budget_(budget), reachable_(reachability(graph, order)) {}

  // Algorithm 2 on one candidate set (in topological order).
  void run(const std::vector<std::size_t> &candidate, std::vector<FusionGroup> &groups) const {
    FusionGroup current;
    for (std::size_t op : candidate) {
      if (current.operators.empty()) {
        current = startGroup(op);
        continue;
      }
      if (extend(current, op))
        continue;
      groups.push_back(std::move(current));
      current = startGroup(op);
    }
    if (!current.operators.empty())
      groups.push_back(std::move(current));
  }

  FusionGroup single(std::size_t op, GroupEnd end) const {
    FusionGroup group;
    group.operators = {op};
    group.estimate = estimateFused(graph_, group.operators);
    group.exceeded = overBudget(group.estimate);
    group.end = group.exceeded.empty() ? end : GroupEnd::OverBudget;
    return group;
  }

private:
  FusionGroup startGroup(std::size_t op) const { return single(op, GroupEnd::EndOfCandidates); }

  ResourceSet overBudget(const FusedEstimate &estimate) const {
    ResourceSet exceeded;
    if (estimate.registersPerThread > budget_.registersPerThread)
      exceeded.add(Resource::Registers);
    if (estimate.sharedMemoryPerCta > budget_.sharedMemoryPerCta)
      exceeded.add(Resource::SharedMemory);
    return exceeded;
  }

  // Adds `op` to the group if that is legal and within budget; otherwise
  // records why the group ends and leaves it unchanged.
  bool extend(FusionGroup &group, std::size_t op) const {
    if (group.end == GroupEnd::OverBudget)
      return false;
    if (hasKernelDependence(group.operators, op))
      return close(group, GroupEnd::Dependence, {});
    if (dependsThroughOutside(group.operators, op))
      return close(group, GroupEnd::Ordering, {});
    std::vector<std::size_t> trial = group.operators;
    trial.push_back(op);
    const FusedEstimate estimate = estimateFused(graph_, trial);
    if (const ResourceSet exceeded = overBudget(estimate); !exceeded.empty())
      return close(group, GroupEnd::Budget, exceeded);
    group.operators = std::move(trial);
    group.estimate = estimate;
    return true;
  }

  static bool close(FusionGroup &group, GroupEnd end, ResourceSet exceeded) {
    group.end = end;
    group.exceeded = exceeded;
    return false;
  }

  bool hasKernelDependence(const std::vector<std::size_t> &group, std::size_t op) const {
    for (const DependenceEdge &edge : graph_.edges()) {
      if (edge.kind != Dependence::Kernel)
        continue;
      if (edge.producer == op && contains(group, edge.consumer))
        return true;
      if (edge.consumer == op && contains(group, edge.producer))
        return true;
    }
    return false;
  }

  // Some operator outside the group is a consumer of the group and a
  // producer of `op`: fusing would create a cycle between fused kernels.
  bool dependsThroughOutside(const std::vector<std::size_t> &group, std::size_t op) const {
    for (std::size_t outside = 0; outside < graph_.size(); ++outside) {
      if (outside == op || contains(group, outside) || !reachable_[outside][op])
        continue;
      for (std::size_t member : group)
        if (reachable_[member][outside])
          return true;
    }
    return false;
  }

  static bool contains(const std::vector<std::size_t> &group, std::size_t op) {
    return std::find(group.begin(), group.end(), op) != group.end();
  }

  const OperatorGraph &graph_;
  FusionBudget budget_;
  std::vector<std::vector<bool>> reachable_;
};

std::vector<std::size_t> positionsOf(const std::vector<std::size_t> &order) {
  std::vector<std::size_t> position(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  return position;
}

} // namespace

FusionBudget fusionBudgetFor(const DeviceLimits &limits, int threadsPerCta, int ctasPerSm) {
  if (ctasPerSm <= 0)
    throw std::invalid_argument("kernelopt: ctasPerSm must be positive");
  const Occupancy slots = computeOccupancy(limits, {0, 0, threadsPerCta});
  if (std::min(slots.blockLimitWarps, slots.blockLimitBlocks) < ctasPerSm)
    throw std::invalid_argument("kernelopt: the warp or block slots cannot hold that many CTAs");
  FusionBudget budget;
  for (int registers = limits.maxRegistersPerThread; registers > 0; --registers)
    if (computeOccupancy(limits, {registers, 0, threadsPerCta}).blockLimitRegisters >= ctasPerSm) {
      budget.registersPerThread = registers;
      break;
    }
  const int perCta =
      limits.sharedMemoryPerSm / ctasPerSm / limits.sharedMemoryAllocationUnit * limits.sharedMemoryAllocationUnit;
  budget.sharedMemoryPerCta =
      std::clamp(perCta - limits.reservedSharedMemoryPerBlock, 0, limits.maxSharedMemoryPerBlock);
  return budget;
}

FusedEstimate estimateFused(const OperatorGraph &graph, std::span<const std::size_t> operators) {
  auto inGroup = [&](std::size_t op) { return std::find(operators.begin(), operators.end(), op) != operators.end(); };
  FusedEstimate estimate;
  for (std::size_t op : operators) {
    estimate.registersPerThread = std::max(estimate.registersPerThread, graph.at(op).registersPerThread);
    estimate.sharedMemoryPerCta += graph.at(op).sharedMemoryPerCta;
  }
  for (const DependenceEdge &edge : graph.edges()) {
    if (edge.kind == Dependence::Kernel || !inGroup(edge.producer) || !inGroup(edge.consumer))
      continue;
    estimate.registersPerThread += edge.data.registersPerThread;
    if (edge.kind == Dependence::Cta)
      estimate.sharedMemoryPerCta += edge.data.sharedMemoryPerCta;
  }
  return estimate;
}

std::vector<std::vector<std::size_t>> fusionCandidates(const OperatorGraph &graph) {
  const std::vector<std::size_t> order = graph.topologicalOrder();
  DisjointSets sets(graph.size());
  for (const DependenceEdge &edge : graph.edges())
    if (edge.kind != Dependence::Kernel)
      sets.join(edge.producer, edge.consumer);
  // Sets in topological order of their first operator, members in
  // topological order.
  std::vector<std::vector<std::size_t>> candidates;
  std::vector<std::size_t> slot(graph.size(), SIZE_MAX);
  for (std::size_t op : order) {
    const std::size_t root = sets.find(op);
    if (slot[root] == SIZE_MAX) {
      slot[root] = candidates.size();
      candidates.emplace_back();
    }
    candidates[slot[root]].push_back(op);
  }
  std::erase_if(candidates, [](const auto &set) { return set.size() < 2; });
  return candidates;
}

FusionPlan planFusion(const OperatorGraph &graph, const FusionBudget &budget) {
  const std::vector<std::size_t> order = graph.topologicalOrder();
  FusionPlan plan;
  plan.candidates = fusionCandidates(graph);
  GroupBuilder builder(graph, budget, order);
  std::vector<bool> inCandidate(graph.size(), false);
  for (const auto &candidate : plan.candidates) {
    builder.run(candidate, plan.groups);
    for (std::size_t op : candidate)
      inCandidate[op] = true;
  }
  for (std::size_t op = 0; op < graph.size(); ++op)
    if (!inCandidate[op])
      plan.groups.push_back(builder.single(op, GroupEnd::KernelDependence));
  const std::vector<std::size_t> position = positionsOf(order);
  std::sort(plan.groups.begin(), plan.groups.end(), [&](const FusionGroup &a, const FusionGroup &b) {
    return position[a.operators.front()] < position[b.operators.front()];
  });
  return plan;
}

} // namespace mqx::kernelopt
