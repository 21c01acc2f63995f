// OperatorGraph: the dependence graph of a query plan's operators, as Kernel
// Weaver builds it (MICRO 2012, §4.1 and Figure 9(b)). Nodes are operators
// with their resource estimates; directed edges are producer-consumer
// dependences labelled with their class:
//
//   - thread: each consumer thread reads what one producer thread wrote
//     (SELECT, PROJECT); fused threads pass the tuple in registers;
//   - CTA: each consumer CTA reads what one producer CTA wrote (JOIN, SET
//     operators); fused CTAs pass data through shared memory after a barrier;
//   - kernel: the consumer needs the whole producer (SORT); no fusion.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mqx::kernelopt {

enum class Dependence { Thread, Cta, Kernel };

// What one operator's code needs per thread and per CTA on its own
// (Kernel Weaver §4.3.3: staging of its inputs and its computation).
struct OperatorEstimate {
  std::string name;
  int registersPerThread = 0;
  int sharedMemoryPerCta = 0; // bytes
};

// What passes along a dependence once producer and consumer are fused
// (§4.3.3): a thread dependence keeps the tuple in registers; a CTA
// dependence keeps the producer's result in shared memory and its size in
// one register.
struct IntermediateData {
  int registersPerThread = 1; // the tuple (thread) or the size (CTA)
  int sharedMemoryPerCta = 0; // the result buffer (CTA dependences only)
};

struct DependenceEdge {
  std::size_t producer = 0;
  std::size_t consumer = 0;
  Dependence kind = Dependence::Kernel;
  IntermediateData data;
};

class OperatorGraph {
public:
  std::size_t addOperator(OperatorEstimate estimate);
  // Throws std::invalid_argument for an unknown operator, a self loop or
  // negative estimates.
  void addDependence(std::size_t producer, std::size_t consumer, Dependence kind, IntermediateData data = {});

  std::size_t size() const { return operators_.size(); }
  const OperatorEstimate &at(std::size_t op) const { return operators_.at(op); }
  const std::vector<DependenceEdge> &edges() const { return edges_; }

  // Kahn's algorithm, the lowest-numbered ready operator first, so that the
  // order is deterministic. Throws std::invalid_argument for a cycle (Kernel
  // Weaver handles acyclic graphs only, §4.1).
  std::vector<std::size_t> topologicalOrder() const;

private:
  std::vector<OperatorEstimate> operators_;
  std::vector<DependenceEdge> edges_;
};

} // namespace mqx::kernelopt
