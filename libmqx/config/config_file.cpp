// Reading the configuration a process starts with: the file (MQX_CONFIG,
// Python's path, or the installed one), then the environment's overrides.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "config/config.hpp"
#include "config/installed_config.hpp"

namespace mqx {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw ConfigError("mqx config: " + key + ": " + why);
}

// Closes a descriptor when it goes out of scope.
class FileDescriptor {
public:
  explicit FileDescriptor(int descriptor) : descriptor_(descriptor) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (descriptor_ >= 0) ::close(descriptor_);
  }
  int get() const { return descriptor_; }

private:
  int descriptor_;
};

} // namespace

std::string readConfigFile(const std::string& path, const std::string& key) {
  // Opened without blocking (a FIFO would wait for a writer) and checked on
  // the descriptor, so that what is read is what was checked.
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) fail(key, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) fail(key, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  if (S_ISDIR(status.st_mode)) fail(key, fmt::format("'{}' is a directory, not a configuration file", path));
  if (!S_ISREG(status.st_mode))
    fail(key, fmt::format("'{}' is not a regular file (a device, pipe or socket), not a configuration file", path));
  const std::string tooLarge =
      fmt::format("'{}' is larger than {} KiB, not a configuration file", path, kMaxConfigFileBytes >> 10);
  if (static_cast<std::uintmax_t>(status.st_size) > kMaxConfigFileBytes) fail(key, tooLarge);
  // Read up to one byte past the bound: a regular file may still grow, and
  // some (in /proc) claim a size of 0.
  std::string text(kMaxConfigFileBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t count = ::read(file.get(), text.data() + used, text.size() - used);
    if (count == 0) break;
    if (count < 0) {
      if (errno == EINTR) continue;
      fail(key, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
    used += static_cast<std::size_t>(count);
  }
  if (used > kMaxConfigFileBytes) fail(key, tooLarge);
  text.resize(used);
  return text;
}

Config loadConfig(const std::map<std::string, std::string>& environment, const std::optional<std::string>& path,
                  const std::optional<std::string>& installedFile) {
  Config config;
  if (path) {
    config = parseConfig(readConfigFile(*path, "path"), *path);
  } else if (auto it = environment.find("MQX_CONFIG"); it != environment.end() && !it->second.empty()) {
    config = parseConfig(readConfigFile(it->second, "MQX_CONFIG"), it->second);
  } else if (installedFile) {
    // Nobody named this file: say which one it was.
    try {
      config = parseConfig(readConfigFile(*installedFile, "the installed configuration"), *installedFile);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{} (in {}, the installed configuration; MQX_CONFIG names another)", error.what(),
                                    *installedFile));
    }
  }
  applyEnvironment(config, environment);
  warnAboutUnknownVariables(environment, config.logLevel);
  return config;
}

Config loadConfig() { return loadConfig(processEnvironment(), std::nullopt, installedConfigFile()); }

} // namespace mqx
