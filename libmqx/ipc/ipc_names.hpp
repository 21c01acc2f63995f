// IpcNames: the names of every shared object of one user's mqx node. They
// carry the uid so that one user's processes never open another's (the
// objects are also created 0600), and an optional instance suffix
// (daemon.instance) so that independent nodes, e.g. parallel tests, coexist.
#pragma once

#include <string>
#include <sys/types.h>

namespace mqx::ipc {

struct IpcNames {
  std::string segment;     // Boost.Interprocess shared memory (under /dev/shm)
  std::string daemonQueue; // requests to mqxd
  // A client's queues: eviction requests to it, replies (admission,
  // eviction acknowledgements) to it.
  std::string evictQueue(pid_t pid) const;
  std::string replyQueue(pid_t pid) const;
  std::string prefix;

  static IpcNames forInstance(const std::string& instance, uid_t uid);
};

} // namespace mqx::ipc
