// Files that mqx reads from or writes to paths it is given (traces, metrics,
// the demand history, plans, the node's runtime directory). Other users may
// write into the directories these paths name (/tmp): nothing here follows a
// symbolic link that someone put at a path mqx writes, writes into a file it
// did not create, or reads without bound (docs/hardening.md, "Threat model").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mqx {

// Closes a descriptor when it goes out of scope.
class FileDescriptor {
public:
  FileDescriptor() = default;
  explicit FileDescriptor(int descriptor) : descriptor_(descriptor) {}
  FileDescriptor(FileDescriptor&& other) noexcept : descriptor_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  [[nodiscard]] int get() const { return descriptor_; }
  [[nodiscard]] bool valid() const { return descriptor_ >= 0; }
  [[nodiscard]] int release() {
    const int descriptor = descriptor_;
    descriptor_ = -1;
    return descriptor;
  }

private:
  int descriptor_ = -1;
};

// The text of the regular file `path`, at most `maxBytes`; nullopt with a
// one-line reason in `error` ("'<path>' is a directory, not <what>", "... is
// not a regular file (a device, pipe or socket), not <what>", "... is larger
// than N KiB, not <what>", "cannot read '<path>': <why>"). Opened without
// blocking (a FIFO would wait for a writer) and checked on the descriptor, so
// that what is read is what was checked; at most maxBytes + 1 bytes are read
// (a file may grow, and some in /proc claim a size of 0).
[[nodiscard]] std::optional<std::string> readRegularFile(const std::string& path, std::size_t maxBytes,
                                                         std::string_view what, std::string* error);

// Replaces `path` with a file holding `contents`, mode `mode`: the bytes go to
// a new file of a random name created exclusively (mkstemp) in path's
// directory, which is then renamed over `path`. A reader never sees half a
// file, and a symbolic link or another user's file at `path` is replaced (or
// the rename refused, in a sticky directory), never written through. Empty on
// success, else a one-line reason naming the path.
[[nodiscard]] std::string writeFileReplacing(const std::string& path, std::string_view contents, mode_t mode);

// A new empty file of mode `mode` at `path` (created exclusively under a
// random name in the same directory and renamed to `path`), open for
// writing: for files written over time (traces). An invalid descriptor and a
// one-line reason in `error` when it cannot be made.
[[nodiscard]] FileDescriptor createFileReplacing(const std::string& path, mode_t mode, std::string* error);

// Makes sure `path` is a directory only this user may use: created 0700 when
// it is absent; refused when it is a symbolic link, not a directory, owned by
// another user or open to the group or others. Empty when it is fine, else a
// one-line reason naming the path and, for another user's, its owner.
[[nodiscard]] std::string ensurePrivateDirectory(const std::string& path);

// "uid N (name)" of a file's owner, for messages.
[[nodiscard]] std::string describeOwner(uid_t uid);

// `bytes` with control characters, backslashes and bytes above 126 written as
// escapes (\n, \t, \e, \xNN), so that text from another process (a query's
// name) cannot move a terminal's cursor or forge lines.
[[nodiscard]] std::string escapeForTerminal(std::string_view bytes);

} // namespace mqx
