// QueryPlan: a query's declared operator plan (a plan file given to mqx-run,
// paper §5): per operator, its expected time and device memory. From it come
// the weighted demand m = Σ tᵢmᵢ / Σ tᵢ and the peak demand max mᵢ.
//
//   name = "q1"            # optional: the query's name
//   [[operator]]
//   time = 2.0             # any unit, the same for every operator
//   memory = "512MiB"      # bytes or a size string
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mqx::daemon {

// A plan of thousands of operators is a few hundred KiB; a larger file (or a
// device, a pipe, a directory) is refused in one line, unread.
inline constexpr std::size_t kMaxPlanFileBytes = std::size_t{1} << 20;

struct OperatorDemand {
  double time = 0;
  std::uint64_t memory = 0;
};

struct QueryPlan {
  std::string name;
  std::vector<OperatorDemand> operators;

  std::uint64_t weightedDemand() const;
  std::uint64_t peakDemand() const;

  // Throws ConfigError naming the file and the problem.
  static QueryPlan parse(const std::string& tomlText, const std::string& origin);
  // A regular file of at most kMaxPlanFileBytes.
  static QueryPlan load(const std::string& path);
};

} // namespace mqx::daemon
