// The four query flights of the reference; each runs the queries of its
// flight, which differ only in their constants and group-by columns.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/reference/query_result.hpp"

namespace mqx::ssb::detail {

QueryResult runFlight1(QueryId query, ColumnCache &cache);
QueryResult runFlight2(QueryId query, ColumnCache &cache);
QueryResult runFlight3(QueryId query, ColumnCache &cache);
QueryResult runFlight4(QueryId query, ColumnCache &cache);

} // namespace mqx::ssb::detail
