// Runs a QueryPlan on the GPU with the operators of operators.hpp. The
// columns must already be in host memory (ColumnCache); what is timed starts
// with their upload and ends when the aggregate is back on the host, as in
// the paper's measurements.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/dense_aggregate.hpp"
#include "ssb/gpu/query_plan.hpp"

#include <string>
#include <vector>

namespace mqx::ssb::gpu {

struct OperatorTiming {
  std::string name; // "select lo_discount", "probe part", ...
  double milliseconds;
};

struct GpuRun {
  DenseAggregate aggregate;
  std::vector<OperatorTiming> operators;
  double totalMilliseconds = 0;
  std::size_t uploadedBytes = 0;
  std::size_t peakDeviceBytes = 0; // held by the query at once, base columns included
};

// Creates the CUDA context (outside any timing, as the paper's queries run
// on an initialised device) and returns the device's name.
std::string initializeDevice();

// OperatorAtATime: the YDB-style plan of operators.hpp. Fused: the same
// dimension builds, then the lineorder pass as one kernel (fused_star.hpp).
enum class Variant { OperatorAtATime, Fused };

GpuRun runPlanOnGpu(const QueryPlan &plan, ColumnCache &cache,
                    Variant variant = Variant::OperatorAtATime);

} // namespace mqx::ssb::gpu
