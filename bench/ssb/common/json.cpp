#include "ssb/common/json.hpp"

#include "ssb/common/error.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace mqx::ssb {
namespace {

// Recursive-descent parser over a string_view; `pos_` always points at the
// next unread character.
class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Json parseDocument() {
    Json value = parseValue(0);
    skipSpace();
    if (pos_ != text_.size())
      fail("trailing characters after the JSON value");
    return value;
  }

private:
  // Deeply nested input is malformed for a manifest; the bound keeps a
  // hostile file from exhausting the stack.
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(std::string_view why) const {
    throw DataError("JSON parse error at offset " + std::to_string(pos_) + ": " + std::string(why));
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }

  char peek() {
    skipSpace();
    if (pos_ >= text_.size())
      fail("unexpected end of input");
    return text_[pos_];
  }

  void expect(char c) {
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Json parseValue(int depth) {
    if (depth > kMaxDepth)
      fail("nesting too deep");
    char c = peek();
    if (c == '{')
      return parseObject(depth);
    if (c == '[')
      return parseArray(depth);
    if (c == '"')
      return Json(parseString());
    if (consumeWord("true"))
      return Json(true);
    if (consumeWord("false"))
      return Json(false);
    if (consumeWord("null"))
      return Json();
    return parseNumber();
  }

  Json parseObject(int depth) {
    expect('{');
    Json::Object object;
    if (peek() == '}') {
      ++pos_;
      return Json(std::move(object));
    }
    while (true) {
      if (peek() != '"')
        fail("expected a string key");
      std::string key = parseString();
      expect(':');
      object.emplace_back(std::move(key), parseValue(depth + 1));
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return Json(std::move(object));
    }
  }

  Json parseArray(int depth) {
    expect('[');
    Json::Array array;
    if (peek() == ']') {
      ++pos_;
      return Json(std::move(array));
    }
    while (true) {
      array.push_back(parseValue(depth + 1));
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return Json(std::move(array));
    }
  }

  unsigned parseHex4() {
    if (pos_ + 4 > text_.size())
      fail("truncated \\u escape");
    unsigned code = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
    if (ec != std::errc() || end != text_.data() + pos_ + 4)
      fail("bad \\u escape");
    pos_ += 4;
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parseString() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size())
        fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        fail("unterminated escape");
      switch (char e = text_[pos_++]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': appendUtf8(out, parseHex4()); break;
      default: fail(std::string("unknown escape \\") + e);
      }
    }
  }

  Json parseNumber() {
    std::size_t start = pos_;
    bool integral = true;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '.' || c == 'e' || c == 'E')
        integral = false;
      else if (!(c == '-' || c == '+' || (c >= '0' && c <= '9')))
        break;
      ++pos_;
    }
    if (start == pos_)
      fail("unexpected character");
    const char *first = text_.data() + start;
    const char *last = text_.data() + pos_;
    if (integral) {
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(first, last, value);
      if (ec == std::errc() && end == last)
        return Json(value);
    }
    double value = 0;
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || end != last)
      fail("malformed number");
    return Json(value);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void appendEscaped(std::string &out, const std::string &text) {
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
        out += buffer;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void appendDouble(std::string &out, double value) {
  if (!std::isfinite(value))
    throw DataError("JSON cannot represent a non-finite number");
  char buffer[32];
  // Shortest representation that reads back to the same double.
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string_view text(buffer, static_cast<std::size_t>(end - buffer));
  out += text;
  // Keep it a double on re-reading, so the value's kind round-trips too.
  if (text.find_first_of(".eE") == std::string_view::npos)
    out += ".0";
}

void appendIndent(std::string &out, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

[[noreturn]] void typeError(std::string_view expected) {
  throw DataError("JSON value is not " + std::string(expected));
}

} // namespace

Json Json::parse(std::string_view text) { return Parser(text).parseDocument(); }

std::string Json::dump() const {
  std::string out;
  dumpTo(out, 0);
  out += '\n';
  return out;
}

void Json::dumpTo(std::string &out, int depth) const {
  if (isNull()) {
    out += "null";
  } else if (auto *b = std::get_if<bool>(&value_)) {
    out += *b ? "true" : "false";
  } else if (auto *i = std::get_if<std::int64_t>(&value_)) {
    out += std::to_string(*i);
  } else if (auto *d = std::get_if<double>(&value_)) {
    appendDouble(out, *d);
  } else if (auto *s = std::get_if<std::string>(&value_)) {
    appendEscaped(out, *s);
  } else if (auto *array = std::get_if<Array>(&value_)) {
    if (array->empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t k = 0; k < array->size(); ++k) {
      appendIndent(out, depth + 1);
      (*array)[k].dumpTo(out, depth + 1);
      out += k + 1 < array->size() ? ",\n" : "\n";
    }
    appendIndent(out, depth);
    out += ']';
  } else {
    const Object &object = std::get<Object>(value_);
    if (object.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    for (std::size_t k = 0; k < object.size(); ++k) {
      appendIndent(out, depth + 1);
      appendEscaped(out, object[k].first);
      out += ": ";
      object[k].second.dumpTo(out, depth + 1);
      out += k + 1 < object.size() ? ",\n" : "\n";
    }
    appendIndent(out, depth);
    out += '}';
  }
}

bool Json::asBool() const {
  if (auto *b = std::get_if<bool>(&value_))
    return *b;
  typeError("a boolean");
}

std::int64_t Json::asInt() const {
  if (auto *i = std::get_if<std::int64_t>(&value_))
    return *i;
  typeError("an integer");
}

double Json::asDouble() const {
  if (auto *d = std::get_if<double>(&value_))
    return *d;
  if (auto *i = std::get_if<std::int64_t>(&value_))
    return static_cast<double>(*i);
  typeError("a number");
}

const std::string &Json::asString() const {
  if (auto *s = std::get_if<std::string>(&value_))
    return *s;
  typeError("a string");
}

const Json::Array &Json::asArray() const {
  if (auto *a = std::get_if<Array>(&value_))
    return *a;
  typeError("an array");
}

const Json::Object &Json::asObject() const {
  if (auto *o = std::get_if<Object>(&value_))
    return *o;
  typeError("an object");
}

const Json *Json::find(std::string_view key) const {
  auto *object = std::get_if<Object>(&value_);
  if (object == nullptr)
    return nullptr;
  for (const auto &[name, value] : *object)
    if (name == key)
      return &value;
  return nullptr;
}

const Json &Json::at(std::string_view key) const {
  if (const Json *value = find(key))
    return *value;
  throw DataError("JSON object has no key \"" + std::string(key) + "\"");
}

} // namespace mqx::ssb
