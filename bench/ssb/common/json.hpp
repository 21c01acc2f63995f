// A small JSON value with a strict parser and a stable printer, enough for the
// SSB manifest. Objects keep their insertion order, so that a manifest written
// twice from the same data is byte-identical (the determinism tests rely on
// it). Integers are kept apart from doubles so that row counts and seeds
// survive a round trip exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mqx::ssb {

class Json {
public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() : value_(nullptr) {}
  Json(bool value) : value_(value) {}
  Json(int value) : value_(static_cast<std::int64_t>(value)) {}
  Json(std::int64_t value) : value_(value) {}
  Json(std::uint64_t value) : value_(static_cast<std::int64_t>(value)) {}
  Json(double value) : value_(value) {}
  Json(const char *value) : value_(std::string(value)) {}
  Json(std::string value) : value_(std::move(value)) {}
  Json(std::string_view value) : value_(std::string(value)) {}
  Json(Array value) : value_(std::move(value)) {}
  Json(Object value) : value_(std::move(value)) {}

  static Json parse(std::string_view text); // throws DataError on malformed input
  std::string dump() const;                 // two-space indented, trailing newline

  bool isNull() const { return std::holds_alternative<std::nullptr_t>(value_); }
  bool isObject() const { return std::holds_alternative<Object>(value_); }
  bool isArray() const { return std::holds_alternative<Array>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isInteger() const { return std::holds_alternative<std::int64_t>(value_); }

  // Typed accessors throw DataError naming the expected type on a mismatch.
  bool asBool() const;
  std::int64_t asInt() const;
  double asDouble() const; // integers convert
  const std::string &asString() const;
  const Array &asArray() const;
  const Object &asObject() const;

  const Json *find(std::string_view key) const; // nullptr when absent or not an object
  const Json &at(std::string_view key) const;   // throws DataError when absent

  bool operator==(const Json &other) const = default;

private:
  void dumpTo(std::string &out, int depth) const;

  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> value_;
};

} // namespace mqx::ssb
