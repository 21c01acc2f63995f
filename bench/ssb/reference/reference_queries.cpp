#include "ssb/reference/reference_queries.hpp"

#include "ssb/reference/flights.hpp"

namespace mqx::ssb {

QueryResult runReferenceQuery(QueryId query, ColumnCache &cache) {
  switch (query) {
  case QueryId::Q1_1:
  case QueryId::Q1_2:
  case QueryId::Q1_3: return detail::runFlight1(query, cache);
  case QueryId::Q2_1:
  case QueryId::Q2_2:
  case QueryId::Q2_3: return detail::runFlight2(query, cache);
  case QueryId::Q3_1:
  case QueryId::Q3_2:
  case QueryId::Q3_3:
  case QueryId::Q3_4: return detail::runFlight3(query, cache);
  case QueryId::Q4_1:
  case QueryId::Q4_2:
  case QueryId::Q4_3: return detail::runFlight4(query, cache);
  }
  return emptyResult(query); // unreachable for a valid QueryId
}

} // namespace mqx::ssb
