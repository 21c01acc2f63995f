// An independent, deliberately naive implementation of the 13 SSB queries
// for differential testing of the reference: row at a time, each join a
// nested loop (a linear scan of the dimension for every lineorder row),
// predicates as string comparisons written straight from the SQL, groups in
// a std::map, and its own ORDER BY. It shares no code with the reference
// beyond the QueryResult type it returns.
#pragma once

#include "decoded_tables.hpp"
#include "ssb/reference/query_result.hpp"

namespace mqx::ssb::test {

QueryResult runNaiveQuery(QueryId query, const DecodedTables &tables);

} // namespace mqx::ssb::test
