// TraceSpan: RAII for one complete event (ph "X"): the time from its
// construction to its destruction on one track. With a null recorder it is
// two predictable branches and nothing else (tracing off).
#pragma once

#include "trace/trace_clock.hpp"
#include "trace/trace_recorder.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx::trace {

class TraceSpan {
public:
  TraceSpan(TraceRecorder* recorder, const char* name, const char* category, std::uint64_t track)
      : recorder_(recorder) {
    if (recorder_ == nullptr) return;
    event_.phase = Phase::Complete;
    event_.name = name;
    event_.category = category;
    event_.track = track == kCurrentThreadTrack ? currentThreadTrack() : track;
    event_.timestampNs = traceNow();
  }
  ~TraceSpan() {
    if (recorder_ == nullptr) return;
    event_.durationNs = traceNow() - event_.timestampNs;
    recorder_->record(event_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

  // Arguments known only later (bytes freed, say) may be added any time
  // before the span ends.
  TraceSpan& argument(const char* key, std::uint64_t value) {
    if (recorder_ != nullptr) event_.argument(key, value);
    return *this;
  }
  TraceSpan& label(std::string_view text) {
    if (recorder_ != nullptr) event_.withLabel(text);
    return *this;
  }
  bool active() const { return recorder_ != nullptr; }

private:
  TraceRecorder* recorder_;
  TraceEvent event_;
};

// An instant event (ph "i") or a counter sample (ph "C") stamped now.
inline TraceEvent instantEvent(const char* name, const char* category, std::uint64_t track) {
  TraceEvent event;
  event.phase = Phase::Instant;
  event.name = name;
  event.category = category;
  event.track = track;
  event.timestampNs = traceNow();
  return event;
}

inline TraceEvent counterEvent(const char* name, const char* key, std::uint64_t value) {
  TraceEvent event;
  event.phase = Phase::Counter;
  event.name = name;
  event.category = "counter";
  event.timestampNs = traceNow();
  event.argument(key, value);
  return event;
}

} // namespace mqx::trace
