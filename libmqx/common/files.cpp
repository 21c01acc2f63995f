#include "common/files.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace mqx {
namespace {

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string baseNameOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A new file of a random name beside `path` (mkstemp: O_EXCL, mode 0600),
// then given `mode`; its name in `temporary`.
FileDescriptor createTemporaryBeside(const std::string& path, mode_t mode, std::string* temporary, std::string* error) {
  std::string pattern = directoryOf(path) + "/." + baseNameOf(path) + ".XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  FileDescriptor file(::mkostemp(name.data(), O_CLOEXEC));
  if (!file.valid()) {
    *error = fmt::format("cannot create a file in '{}' for '{}': {}", directoryOf(path), path, std::strerror(errno));
    return {};
  }
  *temporary = name.data();
  if (::fchmod(file.get(), mode) != 0) {
    *error = fmt::format("cannot set the mode of '{}': {}", *temporary, std::strerror(errno));
    ::unlink(temporary->c_str());
    return {};
  }
  return file;
}

bool writeAll(int descriptor, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(descriptor, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

} // namespace

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (descriptor_ >= 0) ::close(descriptor_);
    descriptor_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

std::optional<std::string> readRegularFile(const std::string& path, std::size_t maxBytes, std::string_view what,
                                           std::string* error) {
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat status {};
  if (!file.valid() || ::fstat(file.get(), &status) != 0) {
    *error = fmt::format("cannot read '{}': {}", path, std::strerror(errno));
    return std::nullopt;
  }
  if (S_ISDIR(status.st_mode)) {
    *error = fmt::format("'{}' is a directory, not {}", path, what);
    return std::nullopt;
  }
  if (!S_ISREG(status.st_mode)) {
    *error = fmt::format("'{}' is not a regular file (a device, pipe or socket), not {}", path, what);
    return std::nullopt;
  }
  const std::string tooLarge = fmt::format("'{}' is larger than {} KiB, not {}", path, maxBytes >> 10, what);
  if (static_cast<std::uintmax_t>(status.st_size) > maxBytes) {
    *error = tooLarge;
    return std::nullopt;
  }
  std::string text(maxBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t count = ::read(file.get(), text.data() + used, text.size() - used);
    if (count == 0) break;
    if (count < 0) {
      if (errno == EINTR) continue;
      *error = fmt::format("cannot read '{}': {}", path, std::strerror(errno));
      return std::nullopt;
    }
    used += static_cast<std::size_t>(count);
  }
  if (used > maxBytes) {
    *error = tooLarge;
    return std::nullopt;
  }
  text.resize(used);
  return text;
}

std::string writeFileReplacing(const std::string& path, std::string_view contents, mode_t mode) {
  std::string temporary, error;
  const FileDescriptor file = createTemporaryBeside(path, mode, &temporary, &error);
  if (!file.valid()) return error;
  if (!writeAll(file.get(), contents)) {
    error = fmt::format("cannot write '{}': {}", temporary, std::strerror(errno));
    ::unlink(temporary.c_str());
    return error;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot replace '{}': {}", path, std::strerror(errno));
    ::unlink(temporary.c_str());
    return error;
  }
  return {};
}

FileDescriptor createFileReplacing(const std::string& path, mode_t mode, std::string* error) {
  std::string temporary;
  FileDescriptor file = createTemporaryBeside(path, mode, &temporary, error);
  if (!file.valid()) return file;
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    *error = fmt::format("cannot replace '{}': {}", path, std::strerror(errno));
    ::unlink(temporary.c_str());
    return {};
  }
  return file;
}

std::string describeOwner(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[1024];
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return fmt::format("uid {} ({})", uid, found->pw_name);
  return fmt::format("uid {}", uid);
}

std::string ensurePrivateDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return fmt::format("cannot create the directory '{}': {}", path, std::strerror(errno));
  // Checked on a descriptor opened without following a link, so that what
  // is checked is the directory itself.
  const FileDescriptor directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat status {};
  if (!directory.valid()) {
    if (errno == ELOOP || errno == ENOTDIR)
      return fmt::format("'{}' is not a directory (a symbolic link or a file): not using it", path);
    return fmt::format("cannot open the directory '{}': {}", path, std::strerror(errno));
  }
  if (::fstat(directory.get(), &status) != 0)
    return fmt::format("cannot read the directory '{}': {}", path, std::strerror(errno));
  if (status.st_uid != ::geteuid())
    return fmt::format("the directory '{}' belongs to {}, not to this user: not using it", path,
                       describeOwner(status.st_uid));
  if ((status.st_mode & 077) != 0)
    return fmt::format("the directory '{}' has mode {:04o}, open to other users (it must be 0700): not using it", path,
                       status.st_mode & 07777);
  return {};
}

std::string escapeForTerminal(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\')
      out += "\\\\";
    else if (byte < 0x20 || byte >= 0x7f)
      out += fmt::format("\\x{:02x}", byte);
    else
      out += c;
  }
  return out;
}

} // namespace mqx
