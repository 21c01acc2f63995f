// A query result in canonical form: column names, and rows of values in the
// query's ORDER BY order with every remaining tie broken by the columns left
// to right, ascending. Group keys that are strings in SQL are strings here
// (decoded from their dictionary codes), so results of different engines, or
// of data directories with different dictionaries, compare directly.
#pragma once

#include "ssb/reference/query_catalog.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace mqx::ssb {

// std::monostate is SQL NULL: the sum of Q1.x over no rows.
using Value = std::variant<std::monostate, std::int64_t, std::string>;
using Row = std::vector<Value>;

struct QueryResult {
  QueryId query;
  std::vector<std::string> columns;
  std::vector<Row> rows;

  bool operator==(const QueryResult &other) const = default;
};

// An empty result with the query's column names.
QueryResult emptyResult(QueryId query);
// Sorts `result.rows` into the canonical order of its query.
void canonicalize(QueryResult &result);
// Header line and one line per row, values separated by " | ".
std::string formatResult(const QueryResult &result);
std::string formatValue(const Value &value);
// Empty when equal; else a sentence naming the first difference.
std::string describeDifference(const QueryResult &expected, const QueryResult &actual);

} // namespace mqx::ssb
