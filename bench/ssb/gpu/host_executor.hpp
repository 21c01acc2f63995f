// Runs a QueryPlan on the host, operator for operator as the GPU executor
// does (dimension selection, hash build, fact selection, probes, dense
// aggregation), but sequentially. It exists to check the plans and the
// result decoding against the CPU reference on machines without a GPU; it is
// not a second reference and not a baseline.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/dense_aggregate.hpp"
#include "ssb/gpu/query_plan.hpp"

namespace mqx::ssb::gpu {

DenseAggregate runPlanOnHost(const QueryPlan &plan, ColumnCache &cache);

} // namespace mqx::ssb::gpu
