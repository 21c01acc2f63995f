#include "kernelopt/operator_graph.hpp"

#include <functional>
#include <queue>
#include <stdexcept>

namespace mqx::kernelopt {

std::size_t OperatorGraph::addOperator(OperatorEstimate estimate) {
  if (estimate.registersPerThread < 0 || estimate.sharedMemoryPerCta < 0)
    throw std::invalid_argument("kernelopt: operator estimates must not be negative");
  operators_.push_back(std::move(estimate));
  return operators_.size() - 1;
}

void OperatorGraph::addDependence(std::size_t producer, std::size_t consumer, Dependence kind, IntermediateData data) {
  if (producer >= size() || consumer >= size())
    throw std::invalid_argument("kernelopt: unknown operator");
  if (producer == consumer)
    throw std::invalid_argument("kernelopt: an operator cannot depend on itself");
  if (data.registersPerThread < 0 || data.sharedMemoryPerCta < 0)
    throw std::invalid_argument("kernelopt: intermediate data estimates must not be negative");
  edges_.push_back({producer, consumer, kind, data});
}

std::vector<std::size_t> OperatorGraph::topologicalOrder() const {
  std::vector<std::size_t> indegree(size(), 0);
  std::vector<std::vector<std::size_t>> consumers(size());
  for (const DependenceEdge &edge : edges_) {
    ++indegree[edge.consumer];
    consumers[edge.producer].push_back(edge.consumer);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t op = 0; op < size(); ++op)
    if (indegree[op] == 0)
      ready.push(op);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t op = ready.top();
    ready.pop();
    order.push_back(op);
    for (std::size_t next : consumers[op])
      if (--indegree[next] == 0)
        ready.push(next);
  }
  if (order.size() != size())
    throw std::invalid_argument("kernelopt: the operator graph has a cycle");
  return order;
}

} // namespace mqx::kernelopt
