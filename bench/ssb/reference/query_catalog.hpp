// The 13 SSB queries as the specification (rev. 3) defines them: their names,
// SQL text, result columns, ORDER BY, and the specification's filter factor
// (the fraction of lineorder rows the WHERE clause selects).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace mqx::ssb {

enum class QueryId { Q1_1, Q1_2, Q1_3, Q2_1, Q2_2, Q2_3, Q3_1, Q3_2, Q3_3, Q3_4, Q4_1, Q4_2, Q4_3 };

inline constexpr std::array<QueryId, 13> kAllQueries{
    QueryId::Q1_1, QueryId::Q1_2, QueryId::Q1_3, QueryId::Q2_1, QueryId::Q2_2,
    QueryId::Q2_3, QueryId::Q3_1, QueryId::Q3_2, QueryId::Q3_3, QueryId::Q3_4,
    QueryId::Q4_1, QueryId::Q4_2, QueryId::Q4_3};

struct OrderKey {
  std::size_t column; // index into the result columns
  bool descending;
};

struct QueryInfo {
  QueryId id;
  std::string_view name; // "q1.1"
  std::string_view sql;
  std::span<const std::string_view> columns; // in SELECT order
  std::span<const OrderKey> orderBy;
  double specFilterFactor;
};

const QueryInfo &queryInfo(QueryId id);
std::string_view queryName(QueryId id);
// Accepts "q1.1", "Q1.1" and "1.1".
std::optional<QueryId> parseQueryName(std::string_view name);

} // namespace mqx::ssb
