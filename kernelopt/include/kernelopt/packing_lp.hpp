// The master problem of the batch-level column generation (knapsack paper,
// "Algorithm of Batch-optimization model", Eqs. 23-25) for kernels that each
// run once (d_i = 1):
//
//   minimise  sum_j x_j   s.t.  sum_j P_ij x_j >= 1 for every kernel i,  x >= 0,
//
// solved through its dual, the packing LP
//
//   maximise  sum_i pi_i  s.t.  sum_i P_ij pi_i <= 1 for every pattern j,  pi >= 0,
//
// whose all-slack basis is feasible at once, by a dense tableau simplex with
// Bland's rule (the LPs are small and highly degenerate). The prices pi_i are
// what the pricing problem (Eq. 26) needs; x_j is read off the final tableau.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace mqx::kernelopt {

struct CoveringLpSolution {
  double value = 0.0;         // the LP optimum, a lower bound on the batch count
  std::vector<double> prices; // pi_i, one per item
  std::vector<double> usage;  // x_j, one per pattern
};

// `patterns[j]` lists the items (0 .. items-1) of pattern j. Throws
// std::invalid_argument when an item is in no pattern (the LP would be
// infeasible) or an index is out of range.
CoveringLpSolution solveCoveringLp(std::size_t items, std::span<const std::vector<std::size_t>> patterns);

} // namespace mqx::kernelopt
