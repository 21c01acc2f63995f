#include "ipc/ipc_names.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/files.hpp"

namespace mqx::ipc {
namespace {

constexpr std::size_t kNodeNameCharacters = 16;

bool validNodeName(const std::string& text) {
  return text.size() == kNodeNameCharacters &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string randomNodeName() {
  std::uint64_t bits = 0;
  for (std::size_t got = 0; got < sizeof bits;) {
    const ssize_t count = getrandom(reinterpret_cast<char*>(&bits) + got, sizeof bits - got, 0);
    if (count < 0 && errno != EINTR) throw std::runtime_error(fmt::format("getrandom: {}", std::strerror(errno)));
    if (count > 0) got += static_cast<std::size_t>(count);
  }
  return fmt::format("{:016x}", bits);
}

// The node name saved in `file`, nullopt when there is none (or it is not
// one: then a new one replaces it).
std::optional<std::string> readNodeName(const std::string& file) {
  std::string error;
  auto text = readRegularFile(file, 64, "a node name", &error);
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' '))
    text->pop_back();
  if (!validNodeName(*text)) return std::nullopt;
  return text;
}

// Saves a new node name unless one is there already (link(2) fails on an
// existing name, so two processes that race agree on the first): the name
// in force.
std::string createNodeName(const std::string& file) {
  const std::string name = randomNodeName();
  const std::string temporary = fmt::format("{}.{}.new", file, name);
  if (const std::string error = writeFileReplacing(temporary, name + "\n", 0600); !error.empty())
    throw std::runtime_error("mqx: cannot save the node's name: " + error);
  const bool linked = ::link(temporary.c_str(), file.c_str()) == 0;
  ::unlink(temporary.c_str());
  if (linked) return name;
  if (auto existing = readNodeName(file)) return *existing;
  // Not a node name (a damaged file): replaced.
  if (const std::string error = writeFileReplacing(file, name + "\n", 0600); !error.empty())
    throw std::runtime_error("mqx: cannot save the node's name: " + error);
  return name;
}

IpcNames withNodeName(IpcNames names, const std::string& base, const std::string& nodeName) {
  names.prefix = base + "-" + nodeName;
  names.segment = names.prefix + "-node";
  names.daemonQueue = "/" + names.prefix + "-daemon";
  names.hostBlockPool = names.prefix + "-host-blocks";
  return names;
}

} // namespace

IpcNames IpcNames::forInstance(const std::string& instance, uid_t uid) {
  IpcNames names;
  const std::string base = instance.empty() ? fmt::format("mqx-{}", uid) : fmt::format("mqx-{}-{}", uid, instance);
  names.runtimeDirectory = fmt::format("/dev/shm/mqx-{}.d", uid);
  const std::string file = names.runtimeDirectory + (instance.empty() ? "/node" : "/node-" + instance);
  names.nodeNameFile = file;
  names.lockFile = file + ".lock";
  names.rosterFile = file + ".clients";
  names.problem = ensurePrivateDirectory(names.runtimeDirectory);
  if (!names.problem.empty()) return names;
  try {
    const auto existing = readNodeName(file);
    return withNodeName(names, base, existing ? *existing : createNodeName(file));
  } catch (const std::exception& error) {
    names.problem = error.what();
    return names;
  }
}

std::string IpcNames::evictQueue(pid_t pid) const { return fmt::format("/{}-evict-{}", prefix, pid); }
std::string IpcNames::replyQueue(pid_t pid) const { return fmt::format("/{}-reply-{}", prefix, pid); }

} // namespace mqx::ipc
