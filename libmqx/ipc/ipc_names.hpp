// IpcNames: the names of every shared object of one user's mqx node, found
// the same way by mqxd, mqx-run, libmqx.so, the Python module and the tests.
//
// Another user must never be able to take a node's names (docs/hardening.md,
// "Threat model"): the objects' names carry a random node name that only this
// user can read or set, kept in a directory of the user's own
// (/dev/shm/mqx-<uid>.d, 0700, checked: ours, not a link, open to nobody
// else). /dev/shm, not $XDG_RUNTIME_DIR or /tmp: every process of the user
// must find the same directory whatever its environment (su, cron, a systemd
// unit with PrivateTmp) and in every container of a Kubernetes node, which
// share the host's /dev/shm (deploy/kubernetes). mqxd drops the node name
// when it stops with no client left, so the next node's names are new and
// an object someone made at an old name is never looked at; every open also checks the object's owner and
// mode (SharedSegment, MessageQueue).
//
// An optional instance (daemon.instance) keeps independent nodes apart, e.g.
// parallel tests.
#pragma once

#include <string>
#include <sys/types.h>

namespace mqx::ipc {

struct IpcNames {
  std::string prefix;      // "mqx-<uid>[-<instance>]-<node name>", every object's
  std::string segment;     // the node's shared memory (under /dev/shm)
  std::string daemonQueue; // requests to mqxd
  // mqxd's pool of host blocks (host_block_lending.hpp): an abstract unix
  // socket's name, so that it goes with mqxd and leaves no file behind.
  std::string hostBlockPool;
  // A client's queues: eviction requests to it, replies (admission,
  // eviction acknowledgements) to it.
  std::string evictQueue(pid_t pid) const;
  std::string replyQueue(pid_t pid) const;

  std::string runtimeDirectory; // /dev/shm/mqx-<uid>.d
  std::string nodeNameFile;     // <runtimeDirectory>/node[-<instance>]: the random node name
  std::string lockFile;         // held (flock) by the one mqxd of the instance
  std::string rosterFile;       // the clients alive at mqxd's last shutdown
  // Why this user's node cannot be reached (the runtime directory is
  // someone else's or open to others), in one line; empty when it can. The
  // object names are then empty, and opening them finds nothing.
  std::string problem;

  // The names of the node of `instance` (the node name is created when
  // there is none yet; mqxd removes it when it stops with no client left).
  static IpcNames forInstance(const std::string& instance, uid_t uid);
};

} // namespace mqx::ipc
