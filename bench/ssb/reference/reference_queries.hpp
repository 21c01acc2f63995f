// The CPU reference implementation of the 13 SSB queries: exact 64-bit
// integer sums over the data behind a ColumnCache, returned in canonical form
// (see query_result.hpp). GPU query programs check their results against it.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/reference/query_result.hpp"

namespace mqx::ssb {

QueryResult runReferenceQuery(QueryId query, ColumnCache &cache);

} // namespace mqx::ssb
