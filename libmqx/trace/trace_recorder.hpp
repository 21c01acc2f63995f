// TraceRecorder: a process's trace of what mqx did (docs/hardening.md,
// "Trace"): transfers, evictions, launches, fence waits; in mqxd, admission
// decisions. Events go into a bounded buffer (trace.buffer_events) that is
// written to the file whenever it is full, on flush() and on destruction,
// so memory stays bounded however long the process runs and nothing is lost.
// The file is valid Chrome trace-event JSON once the recorder is destroyed;
// a process killed before that leaves it without its closing "]}", which
// tools/merge-traces repairs.
//
// Off (trace.file = ""), no recorder exists: the owner holds a null pointer
// and every trace point is one predictable branch (TraceSpan, recordIf).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_event.hpp"
#include "trace/trace_file.hpp"

namespace mqx::trace {

class TraceRecorder {
public:
  // Null when `pathPattern` is empty (tracing off). "%p" in it becomes the
  // pid. Throws std::runtime_error when the file cannot be created.
  static std::unique_ptr<TraceRecorder> open(const std::string& pathPattern, std::string_view processName,
                                             std::size_t bufferEvents);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Thread-safe. Ignored in a fork() child (the file is its parent's).
  void record(const TraceEvent& event);
  // Names a track (a viewer's row), e.g. "H2D stream".
  void nameTrack(std::uint64_t track, std::string_view name);
  void flush();
  // Writes what is buffered and closes the JSON; later events are dropped.
  // For processes that never destroy the recorder (libmqx.so's runtime
  // lives until exit): called from an exit handler. Idempotent.
  void finish();

  const std::string& path() const { return file_.path(); }

private:
  TraceRecorder(const std::string& path, std::size_t bufferEvents);
  void writeBuffered();                    // with mutex_ held
  void writeJson(const std::string& text); // with mutex_ held

  mutable std::mutex mutex_;
  TraceFile file_;
  pid_t owner_;
  std::size_t capacity_;
  std::vector<TraceEvent> buffer_;
  std::uint64_t recorded_ = 0;
  bool anyWritten_ = false; // a separator goes before every later event
  bool failed_ = false;     // the file took no more (reported once)
  bool finished_ = false;
};

// Records `event` when tracing is on.
inline void recordIf(TraceRecorder* recorder, const TraceEvent& event) {
  if (recorder != nullptr) recorder->record(event);
}

} // namespace mqx::trace
