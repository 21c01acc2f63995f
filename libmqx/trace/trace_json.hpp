// The JSON text of trace events (Chrome trace-event format, "JSON Object
// Format": {"traceEvents": [...]}; timestamps in microseconds).
#pragma once

#include <string>
#include <string_view>

#include "trace/trace_event.hpp"

namespace mqx::trace {

// Appends `event` of process `pid` as one JSON object (no separator).
void appendEventJson(std::string& out, const TraceEvent& event, long pid);
// A metadata event (ph "M") naming the process or one of its tracks.
void appendProcessNameJson(std::string& out, long pid, std::string_view name);
void appendTrackNameJson(std::string& out, long pid, std::uint64_t track, std::string_view name);
// `text` as a JSON string literal, quotes included.
void appendJsonString(std::string& out, std::string_view text);

} // namespace mqx::trace
