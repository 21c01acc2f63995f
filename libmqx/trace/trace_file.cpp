#include "trace/trace_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/files.hpp"

namespace mqx::trace {

TraceFile::TraceFile(const std::string& path) : path_(path) {
  // A new file renamed to the path, never one opened through it: the
  // directory (/tmp) may hold another user's link or file of that name.
  std::string error;
  descriptor_ = createFileReplacing(path, 0600, &error).release();
  if (descriptor_ < 0) throw std::runtime_error("mqx trace: " + error);
}

TraceFile::~TraceFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

bool TraceFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(descriptor_, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

std::string expandTracePath(const std::string& pattern, long pid) {
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(pid);
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == '%') {
      path += '%';
      ++i;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

} // namespace mqx::trace
