#include "ipc/ipc_names.hpp"

#include <fmt/format.h>

namespace mqx::ipc {

IpcNames IpcNames::forInstance(const std::string& instance, uid_t uid) {
  IpcNames names;
  names.prefix = instance.empty() ? fmt::format("mqx-{}", uid) : fmt::format("mqx-{}-{}", uid, instance);
  names.segment = names.prefix + "-node";
  names.daemonQueue = "/" + names.prefix + "-daemon";
  return names;
}

std::string IpcNames::evictQueue(pid_t pid) const { return fmt::format("/{}-evict-{}", prefix, pid); }
std::string IpcNames::replyQueue(pid_t pid) const { return fmt::format("/{}-reply-{}", prefix, pid); }

} // namespace mqx::ipc
