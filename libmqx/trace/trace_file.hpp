// TraceFile: RAII over the descriptor of one trace file. Plain write(2), no
// stdio buffer: a fork() child inherits the object, and must neither flush
// nor close the parent's bytes (TraceRecorder checks the pid; an inherited
// stdio buffer would be written twice).
#pragma once

#include <string>
#include <string_view>

namespace mqx::trace {

class TraceFile {
public:
  // Creates `path` anew, 0600 (common/files.hpp: createFileReplacing; a
  // link or file there is replaced, never written through); throws
  // std::runtime_error naming it.
  explicit TraceFile(const std::string& path);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // False when the file cannot take more (disk full): the trace is then
  // incomplete, never the process's work.
  bool write(std::string_view bytes);
  const std::string& path() const { return path_; }

private:
  int descriptor_ = -1;
  std::string path_;
};

// `pattern` with every "%p" replaced by `pid` and "%%" by "%".
std::string expandTracePath(const std::string& pattern, long pid);

} // namespace mqx::trace
