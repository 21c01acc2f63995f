// Runs a QueryPlan on a QueryDevice (the GPU or the simulated device) with
// the operators of query_device.hpp. The columns must already be in host
// memory (ColumnCache); what is timed starts with their upload and ends when
// the aggregate is back on the host, as in the paper's measurements.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/dense_aggregate.hpp"
#include "ssb/gpu/query_device.hpp"
#include "ssb/gpu/query_plan.hpp"

#include <string>
#include <vector>

namespace mqx::ssb::gpu {

struct OperatorTiming {
  std::string name; // "select lo_discount", "probe part", ...
  double milliseconds;
  std::size_t deviceBytes; // the most device memory held during the step
};

struct QueryRun {
  DenseAggregate aggregate;
  std::vector<OperatorTiming> operators;
  double totalMilliseconds = 0;
  std::size_t uploadedBytes = 0;
  std::size_t peakDeviceBytes = 0; // held by the query at once, base columns included
};

// OperatorAtATime: the YDB-style plan of operators.hpp. Fused: the same
// dimension builds, then the lineorder pass as one kernel (fused_star.hpp).
// JoinFirst: late materialisation through a join index. Every lineorder row
// is joined with every dimension before any predicate applies (hash tables
// over all dimension rows carrying each row's position), the positions are
// carried as intermediates of lineorder's length, and the predicates and
// group attributes are applied afterwards by gathers through them. Its
// intermediates are large, written on the device and read again operators
// later, next to base columns read once: the workload where evicting clean
// data before dirty data matters (docs/ssb.md, "CDR against LRU").
enum class Variant { OperatorAtATime, Fused, JoinFirst };

QueryRun runPlan(const QueryPlan& plan, ColumnCache& cache, QueryDevice& device,
                 Variant variant = Variant::OperatorAtATime);

} // namespace mqx::ssb::gpu
