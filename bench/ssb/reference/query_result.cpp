#include "ssb/reference/query_result.hpp"

#include <algorithm>

namespace mqx::ssb {
namespace {

// NULL < integers < strings; within a kind, the natural order. Mixed kinds
// never meet in one column of a well-formed result, but the order must be
// total for std::sort anyway.
int compareValues(const Value &a, const Value &b) {
  if (a.index() != b.index())
    return a.index() < b.index() ? -1 : 1;
  if (auto *x = std::get_if<std::int64_t>(&a)) {
    std::int64_t y = std::get<std::int64_t>(b);
    return *x < y ? -1 : (*x > y ? 1 : 0);
  }
  if (auto *x = std::get_if<std::string>(&a))
    return x->compare(std::get<std::string>(b));
  return 0;
}

bool canonicalLess(const QueryInfo &info, const Row &a, const Row &b) {
  for (const OrderKey &key : info.orderBy) {
    int c = compareValues(a[key.column], b[key.column]);
    if (c != 0)
      return key.descending ? c > 0 : c < 0;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (int c = compareValues(a[i], b[i]); c != 0)
      return c < 0;
  return false;
}

std::string formatRow(const Row &row) {
  std::string line;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (i > 0)
      line += " | ";
    line += formatValue(row[i]);
  }
  return line;
}

} // namespace

QueryResult emptyResult(QueryId query) {
  QueryResult result{query, {}, {}};
  for (std::string_view column : queryInfo(query).columns)
    result.columns.emplace_back(column);
  return result;
}

void canonicalize(QueryResult &result) {
  const QueryInfo &info = queryInfo(result.query);
  std::sort(result.rows.begin(), result.rows.end(),
            [&info](const Row &a, const Row &b) { return canonicalLess(info, a, b); });
}

std::string formatValue(const Value &value) {
  if (auto *i = std::get_if<std::int64_t>(&value))
    return std::to_string(*i);
  if (auto *s = std::get_if<std::string>(&value))
    return *s;
  return "NULL";
}

std::string formatResult(const QueryResult &result) {
  std::string text;
  for (std::size_t i = 0; i < result.columns.size(); ++i) {
    if (i > 0)
      text += " | ";
    text += result.columns[i];
  }
  text += '\n';
  for (const Row &row : result.rows)
    text += formatRow(row) + '\n';
  return text;
}

std::string describeDifference(const QueryResult &expected, const QueryResult &actual) {
  if (expected.query != actual.query)
    return "different queries: " + std::string(queryName(expected.query)) + " vs " +
           std::string(queryName(actual.query));
  if (expected.columns != actual.columns)
    return "different result columns";
  std::size_t common = std::min(expected.rows.size(), actual.rows.size());
  for (std::size_t i = 0; i < common; ++i)
    if (expected.rows[i] != actual.rows[i])
      return "row " + std::to_string(i) + ": expected [" + formatRow(expected.rows[i]) +
             "], got [" + formatRow(actual.rows[i]) + "]";
  if (expected.rows.size() != actual.rows.size())
    return "expected " + std::to_string(expected.rows.size()) + " rows, got " +
           std::to_string(actual.rows.size());
  return {};
}

} // namespace mqx::ssb
