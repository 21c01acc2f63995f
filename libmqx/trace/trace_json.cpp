#include "trace/trace_json.hpp"

#include <fmt/format.h>

namespace mqx::trace {
namespace {

// Microseconds with nanosecond digits: what the viewers read as "ts".
void appendMicroseconds(std::string& out, std::uint64_t nanoseconds) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", nanoseconds / 1000, nanoseconds % 1000);
}

} // namespace

void appendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c); // bytes beyond ASCII as code points, valid JSON
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void appendEventJson(std::string& out, const TraceEvent& event, long pid) {
  out += "{\"name\":";
  appendJsonString(out, event.name);
  out += ",\"cat\":";
  appendJsonString(out, event.category);
  fmt::format_to(std::back_inserter(out),
                 ",\"ph\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":", static_cast<char>(event.phase), pid, event.track);
  appendMicroseconds(out, event.timestampNs);
  if (event.phase == Phase::Complete) {
    out += ",\"dur\":";
    appendMicroseconds(out, event.durationNs);
  }
  if (event.phase == Phase::Instant) out += ",\"s\":\"t\""; // scope: the track
  out += ",\"args\":{";
  bool first = true;
  for (const auto& argument : event.arguments) {
    if (argument.key == nullptr) continue;
    if (!first) out += ',';
    first = false;
    appendJsonString(out, argument.key);
    fmt::format_to(std::back_inserter(out), ":{}", argument.value);
  }
  if (event.label[0] != '\0') {
    if (!first) out += ',';
    out += "\"label\":";
    appendJsonString(out, event.label);
  }
  out += "}}";
}

void appendProcessNameJson(std::string& out, long pid, std::string_view name) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":", pid);
  appendJsonString(out, name);
  out += "}}";
}

void appendTrackNameJson(std::string& out, long pid, std::uint64_t track, std::string_view name) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", pid, track);
  appendJsonString(out, name);
  out += "}}";
}

} // namespace mqx::trace
