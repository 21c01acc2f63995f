// The JSON text of trace events (Chrome trace-event format, "JSON Object
// Format": {"traceEvents": [...]}; timestamps in microseconds). Each event is
// one nlohmann::json object printed on one line; TraceRecorder streams them
// between kTraceFileStart and kTraceFileEnd as they are recorded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/trace_event.hpp"

namespace mqx::trace {

// The frame around the events, written as text: the array grows as events
// arrive, so the document is never whole in memory. An event line ends with
// "}", which is what tools/merge-traces looks for to repair the file of a
// process killed before it wrote kTraceFileEnd.
inline constexpr std::string_view kTraceFileStart = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
inline constexpr std::string_view kTraceFileEnd = "\n]}\n";

// Appends `event` of process `pid` as one JSON object (no separator).
void appendEventJson(std::string& out, const TraceEvent& event, long pid);
// A metadata event (ph "M") naming the process or one of its tracks.
void appendProcessNameJson(std::string& out, long pid, std::string_view name);
void appendTrackNameJson(std::string& out, long pid, std::uint64_t track, std::string_view name);

} // namespace mqx::trace
