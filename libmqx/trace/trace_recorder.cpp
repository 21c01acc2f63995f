#include "trace/trace_recorder.hpp"

#include <unistd.h>

#include <algorithm>

#include "common/log.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx::trace {

std::unique_ptr<TraceRecorder> TraceRecorder::open(const std::string& pathPattern, std::string_view processName,
                                                   std::size_t bufferEvents) {
  if (pathPattern.empty()) return nullptr;
  std::unique_ptr<TraceRecorder> recorder(new TraceRecorder(expandTracePath(pathPattern, getpid()), bufferEvents));
  std::string header(kTraceFileStart);
  appendProcessNameJson(header, recorder->owner_, processName);
  header += ",\n";
  appendTrackNameJson(header, recorder->owner_, kToDeviceTrack, "H2D stream (loads)");
  header += ",\n";
  appendTrackNameJson(header, recorder->owner_, kToHostTrack, "D2H stream (write-backs)");
  std::lock_guard lock(recorder->mutex_);
  recorder->writeJson(header);
  return recorder;
}

TraceRecorder::TraceRecorder(const std::string& path, std::size_t bufferEvents)
    : file_(path), owner_(getpid()), capacity_(std::max<std::size_t>(bufferEvents, 1)) {
  buffer_.reserve(capacity_);
}

TraceRecorder::~TraceRecorder() { finish(); }

void TraceRecorder::finish() {
  std::lock_guard lock(mutex_);
  if (getpid() != owner_ || finished_) return;
  writeBuffered();
  writeJson(std::string(kTraceFileEnd));
  finished_ = true;
  log(LogLevel::Info, "trace: {} events written to {}", recorded_, file_.path());
}

void TraceRecorder::record(const TraceEvent& event) {
  std::lock_guard lock(mutex_);
  if (getpid() != owner_ || finished_) return;
  buffer_.push_back(event);
  ++recorded_;
  if (buffer_.size() >= capacity_) writeBuffered();
}

void TraceRecorder::nameTrack(std::uint64_t track, std::string_view name) {
  std::lock_guard lock(mutex_);
  if (getpid() != owner_ || finished_) return;
  std::string text = ",\n";
  appendTrackNameJson(text, owner_, track, name);
  writeJson(text);
}

void TraceRecorder::flush() {
  std::lock_guard lock(mutex_);
  if (getpid() == owner_ && !finished_) writeBuffered();
}

void TraceRecorder::writeBuffered() {
  if (buffer_.empty()) return;
  std::string text;
  text.reserve(buffer_.size() * 160);
  for (const TraceEvent& event : buffer_) {
    text += ",\n";
    appendEventJson(text, event, owner_);
  }
  buffer_.clear();
  writeJson(text);
}

void TraceRecorder::writeJson(const std::string& text) {
  if (failed_) return;
  if (!file_.write(text)) {
    failed_ = true;
    log(LogLevel::Warn, "trace: cannot write {}; the trace stops here", file_.path());
  }
}

} // namespace mqx::trace
