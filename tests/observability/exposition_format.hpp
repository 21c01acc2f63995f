// A checker of the Prometheus text exposition format (version 0.0.4), for
// the metrics tests: the rules a scraper relies on, written from the format's
// description, not from mqxd's code.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mqx::test {

struct Exposition {
  std::map<std::string, std::string> types;                  // family -> gauge, counter, ...
  std::map<std::string, double> samples;                     // "name{labels}" as written -> value
  std::vector<std::map<std::string, std::string>> labelSets; // every sample's labels, unescaped
  std::vector<std::string> errors;                           // empty: valid
  double value(const std::string& series) const {
    auto it = samples.find(series);
    return it == samples.end() ? -1 : it->second;
  }
};

// Checks: each line is "# HELP name text", "# TYPE name type" or a sample
// "name{label="value",...} number"; names match [a-zA-Z_:][a-zA-Z0-9_:]*,
// label names [a-zA-Z_][a-zA-Z0-9_]*; label values are quoted with only \\,
// \" and \n escapes; a family has one HELP and one TYPE, before its samples,
// and its samples are contiguous; counters end in _total; the text ends
// with a newline.
Exposition parseExposition(const std::string& text);

} // namespace mqx::test
