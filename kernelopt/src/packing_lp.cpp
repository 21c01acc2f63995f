#include "kernelopt/packing_lp.hpp"

#include <stdexcept>

namespace mqx::kernelopt {

namespace {

constexpr double kEpsilon = 1e-9;

// A dense simplex tableau for: maximise sum_i pi_i s.t. A^T pi <= 1, pi >= 0.
// Columns 0..n-1 are the prices, n..n+m-1 the slacks of the m patterns.
class Tableau {
public:
  Tableau(std::size_t items, std::span<const std::vector<std::size_t>> patterns)
      : rows_(patterns.size()), columns_(items + patterns.size()), cells_(rows_ * columns_, 0.0), rhs_(rows_, 1.0),
        objective_(columns_, 0.0), basis_(rows_) {
    for (std::size_t i = 0; i < items; ++i)
      objective_[i] = -1.0;
    for (std::size_t j = 0; j < rows_; ++j) {
      for (std::size_t item : patterns[j])
        at(j, item) = 1.0;
      at(j, items + j) = 1.0;
      basis_[j] = items + j;
    }
  }

  void optimise() {
    for (;;) {
      const std::size_t entering = enteringColumn();
      if (entering == columns_)
        return;
      const std::size_t leaving = leavingRow(entering);
      if (leaving == rows_)
        throw std::logic_error("kernelopt: covering LP dual is unbounded");
      pivot(leaving, entering);
    }
  }

  double value() const { return value_; }
  double variable(std::size_t column) const {
    for (std::size_t row = 0; row < rows_; ++row)
      if (basis_[row] == column)
        return rhs_[row];
    return 0.0;
  }
  double reducedCost(std::size_t column) const { return objective_[column]; }

private:
  double &at(std::size_t row, std::size_t column) { return cells_[row * columns_ + column]; }

  // Bland's rule: the lowest-index column that improves the objective.
  std::size_t enteringColumn() const {
    for (std::size_t column = 0; column < columns_; ++column)
      if (objective_[column] < -kEpsilon)
        return column;
    return columns_;
  }

  // Minimum ratio; ties go to the lowest basic variable (Bland).
  std::size_t leavingRow(std::size_t column) {
    std::size_t best = rows_;
    double bestRatio = 0.0;
    for (std::size_t row = 0; row < rows_; ++row) {
      const double coefficient = at(row, column);
      if (coefficient <= kEpsilon)
        continue;
      const double ratio = rhs_[row] / coefficient;
      if (best == rows_ || ratio < bestRatio - kEpsilon ||
          (ratio <= bestRatio + kEpsilon && basis_[row] < basis_[best])) {
        best = row;
        bestRatio = ratio;
      }
    }
    return best;
  }

  void pivot(std::size_t pivotRow, std::size_t pivotColumn) {
    const double scale = at(pivotRow, pivotColumn);
    for (std::size_t column = 0; column < columns_; ++column)
      at(pivotRow, column) /= scale;
    rhs_[pivotRow] /= scale;
    for (std::size_t row = 0; row < rows_; ++row) {
      if (row == pivotRow)
        continue;
      eliminate(row, pivotRow, pivotColumn);
    }
    const double factor = objective_[pivotColumn];
    if (factor != 0.0) {
      for (std::size_t column = 0; column < columns_; ++column)
        objective_[column] -= factor * at(pivotRow, column);
      value_ -= factor * rhs_[pivotRow];
    }
    basis_[pivotRow] = pivotColumn;
  }

  void eliminate(std::size_t row, std::size_t pivotRow, std::size_t pivotColumn) {
    const double factor = at(row, pivotColumn);
    if (factor == 0.0)
      return;
    for (std::size_t column = 0; column < columns_; ++column)
      at(row, column) -= factor * at(pivotRow, column);
    rhs_[row] -= factor * rhs_[pivotRow];
  }

  std::size_t rows_;
  std::size_t columns_;
  std::vector<double> cells_;
  std::vector<double> rhs_;
  std::vector<double> objective_;
  std::vector<std::size_t> basis_;
  double value_ = 0.0;
};

void checkPatterns(std::size_t items, std::span<const std::vector<std::size_t>> patterns) {
  std::vector<bool> covered(items, false);
  for (const auto &pattern : patterns)
    for (std::size_t item : pattern) {
      if (item >= items)
        throw std::invalid_argument("kernelopt: pattern item out of range");
      covered[item] = true;
    }
  for (bool c : covered)
    if (!c)
      throw std::invalid_argument("kernelopt: an item is in no pattern");
}

} // namespace

CoveringLpSolution solveCoveringLp(std::size_t items, std::span<const std::vector<std::size_t>> patterns) {
  checkPatterns(items, patterns);
  Tableau tableau(items, patterns);
  tableau.optimise();
  CoveringLpSolution solution;
  solution.value = tableau.value();
  for (std::size_t i = 0; i < items; ++i)
    solution.prices.push_back(tableau.variable(i));
  // The dual value of pattern j's constraint is the reduced cost of its slack.
  for (std::size_t j = 0; j < patterns.size(); ++j)
    solution.usage.push_back(tableau.reducedCost(items + j));
  return solution;
}

} // namespace mqx::kernelopt
