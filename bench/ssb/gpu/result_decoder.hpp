// Turns a DenseAggregate into the query's canonical QueryResult: existing
// groups only, attributes decoded through the dimension dictionaries, rows in
// canonical order, Q1.x's empty sum as NULL. Shared by all executors, so the
// GPU result is compared with the reference in exactly the reference's form.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/dense_aggregate.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/reference/query_result.hpp"

namespace mqx::ssb::gpu {

QueryResult decodeResult(const QueryPlan &plan, const DenseAggregate &aggregate,
                         ColumnCache &cache);

} // namespace mqx::ssb::gpu
