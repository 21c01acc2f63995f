#include "exposition_format.hpp"

#include <cctype>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

namespace mqx::test {
namespace {

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");

// Parses `{a="x",b="y"}` from `text` at `position` (just after '{').
bool parseLabels(const std::string& text, std::size_t& position, std::map<std::string, std::string>& labels,
                 std::string& error) {
  while (position < text.size() && text[position] != '}') {
    const std::size_t equals = text.find('=', position);
    if (equals == std::string::npos) return error = "label without '='", false;
    const std::string name = text.substr(position, equals - position);
    if (!std::regex_match(name, kLabelName)) return error = "bad label name '" + name + "'", false;
    position = equals + 1;
    if (position >= text.size() || text[position] != '"') return error = "label value not quoted", false;
    ++position;
    std::string value;
    for (;;) {
      if (position >= text.size()) return error = "unterminated label value", false;
      const char c = text[position++];
      if (c == '"') break;
      if (c == '\n') return error = "raw newline in label value", false;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (position >= text.size()) return error = "dangling escape", false;
      const char escaped = text[position++];
      if (escaped == 'n')
        value += '\n';
      else if (escaped == '\\' || escaped == '"')
        value += escaped;
      else
        return error = std::string("bad escape \\") + escaped, false;
    }
    if (labels.count(name) != 0) return error = "label '" + name + "' twice", false;
    labels[name] = value;
    if (position < text.size() && text[position] == ',') ++position;
  }
  if (position >= text.size()) return error = "labels not closed", false;
  ++position; // '}'
  return true;
}

} // namespace

Exposition parseExposition(const std::string& text) {
  Exposition result;
  if (text.empty() || text.back() != '\n') result.errors.push_back("does not end with a newline");
  std::istringstream lines(text);
  std::set<std::string> helped, finished;
  std::string current; // the family whose samples are being read
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    auto fail = [&](const std::string& why) { result.errors.push_back("line " + std::to_string(number) + ": " + why); };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, keyword, name;
      words >> hash >> keyword >> name;
      if (keyword != "HELP" && keyword != "TYPE") continue; // a plain comment
      if (!std::regex_match(name, kMetricName)) fail("bad metric name '" + name + "'");
      if (finished.count(name) != 0 || (name != current && (helped.count(name) || result.types.count(name))))
        fail(keyword + " of '" + name + "' after its samples or twice");
      if (current != name && !current.empty()) finished.insert(current);
      current = name;
      if (keyword == "HELP") {
        if (!helped.insert(name).second) fail("HELP twice for " + name);
      } else {
        std::string type;
        words >> type;
        static const std::set<std::string> types{"counter", "gauge", "histogram", "summary", "untyped"};
        if (types.count(type) == 0) fail("unknown type '" + type + "'");
        if (result.types.count(name) != 0) fail("TYPE twice for " + name);
        result.types[name] = type;
        if (type == "counter" && !name.ends_with("_total")) fail("counter " + name + " does not end in _total");
      }
      continue;
    }
    std::size_t position = 0;
    while (position < line.size() && line[position] != '{' && line[position] != ' ')
      ++position;
    const std::string name = line.substr(0, position);
    if (!std::regex_match(name, kMetricName)) {
      fail("bad metric name '" + name + "'");
      continue;
    }
    if (result.types.count(name) == 0) fail("sample of " + name + " before its TYPE");
    if (name != current) fail("samples of " + name + " not contiguous with its TYPE");
    std::map<std::string, std::string> labels;
    if (position < line.size() && line[position] == '{') {
      ++position;
      std::string error;
      if (!parseLabels(line, position, labels, error)) {
        fail(error);
        continue;
      }
    }
    const std::string series = line.substr(0, position);
    if (position >= line.size() || line[position] != ' ') {
      fail("no value");
      continue;
    }
    const std::string value = line.substr(position + 1);
    char* end = nullptr;
    const double number_value = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') fail("value '" + value + "' is not a number");
    if (result.samples.count(series) != 0) fail("series " + series + " twice");
    result.samples[series] = number_value;
    result.labelSets.push_back(labels);
  }
  return result;
}

} // namespace mqx::test
