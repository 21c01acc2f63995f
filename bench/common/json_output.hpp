// How the benchmarks write their results files: one nlohmann::ordered_json
// document each (keys in the order they were set), two-space indented.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mqx::bench {

using Json = nlohmann::ordered_json;

// `document` as the text of a results file: two-space indented, one trailing
// newline. Bytes that are not UTF-8 (a device or variant name) become U+FFFD
// rather than failing a run that took minutes; non-finite numbers are null.
std::string jsonText(const Json& document);

// Writes jsonText(document) to `path`; false, with a line on stderr naming
// the file, when it cannot.
bool writeJsonFile(const std::string& path, const Json& document);

// `value` rounded to `decimals` places, so that a results file shows the
// digits a measurement has rather than the 17 of the nearest double.
double rounded(double value, int decimals);

} // namespace mqx::bench
