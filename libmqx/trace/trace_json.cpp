#include "trace/trace_json.hpp"

#include <nlohmann/json.hpp>

namespace mqx::trace {
namespace {

using Json = nlohmann::ordered_json;

// Microseconds, what the viewers read as "ts". A double holds the nanosecond
// digits exactly while CLOCK_MONOTONIC is below 2^52 ns (52 days of uptime),
// and to within a few nanoseconds after.
double microseconds(std::uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

// One line. Labels are cut at a byte count and names come from the command
// line: bytes that are not UTF-8 become U+FFFD instead of failing the trace.
void appendLine(std::string& out, const Json& object) {
  out += object.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json metadataEvent(const char* kind, long pid, std::uint64_t track, std::string_view name) {
  return {{"name", kind}, {"ph", "M"}, {"pid", pid}, {"tid", track}, {"args", {{"name", name}}}};
}

} // namespace

void appendEventJson(std::string& out, const TraceEvent& event, long pid) {
  Json object = {{"name", event.name}, {"cat", event.category}, {"ph", std::string(1, static_cast<char>(event.phase))},
                 {"pid", pid},         {"tid", event.track},    {"ts", microseconds(event.timestampNs)}};
  if (event.phase == Phase::Complete) object["dur"] = microseconds(event.durationNs);
  if (event.phase == Phase::Instant) object["s"] = "t"; // scope: the track
  Json arguments = Json::object();
  for (const auto& argument : event.arguments)
    if (argument.key != nullptr) arguments[argument.key] = argument.value;
  if (event.label[0] != '\0') arguments["label"] = event.label;
  object["args"] = std::move(arguments);
  appendLine(out, object);
}

void appendProcessNameJson(std::string& out, long pid, std::string_view name) {
  appendLine(out, metadataEvent("process_name", pid, 0, name));
}

void appendTrackNameJson(std::string& out, long pid, std::uint64_t track, std::string_view name) {
  appendLine(out, metadataEvent("thread_name", pid, track, name));
}

} // namespace mqx::trace
