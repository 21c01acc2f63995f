// NodeMembership: a process's membership of the node that mqxd runs. It
// claims a client record in the segment, owns the process's queues (replies;
// and, for a memory client, eviction requests, served by a thread that also
// beats the record's heartbeat) and frees the record when it leaves. Two
// roles:
//  - Query: mqx-run's (or mqx.Client's) record, which asks for admission
//    (paper §5) through an AdmissionClient;
//  - Memory: a process with a MemoryManager; its device memory is drawn from
//    the node budget (SharedDeviceBudget, over this membership) and other
//    processes may ask it to evict (docs/architecture.md decision 8: only the
//    owner's context can unmap). It asks the others to evict in turn.
// What a query declares or waits for is the AdmissionClient's, not this.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/peer_regions.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/node_state.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::ipc {

// NodeMembership::connect's refusal of a device the node does not have: one
// line naming it and listing the node's devices.
struct UnknownDevice : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Which node to join and how long its members wait for each other
// (daemon.* in configs/default.toml, whose defaults these are).
struct NodeOptions {
  std::string instance;                        // daemon.instance: the node's IPC names
  unsigned evictionTimeoutMilliseconds = 2000; // daemon.eviction_timeout_ms
  // Which of the node's devices (docs/daemon.md, "Several GPUs"): a GPU's
  // UUID ("GPU-..."), a simulated device's name ("sim-<n>") or the device's
  // decimal index on the node. "": a memory client draws on the node's first
  // device; a query is placed by mqxd when it is admitted.
  std::string device{};
};

class NodeMembership {
public:
  enum class Role { Query, Memory };
  // Frees up to `bytes` of this process's device memory for another process,
  // preferring `region` (one of this process's RegionIds, 0 for none: global
  // victim selection names the victim); returns the bytes freed.
  using Evictor = std::function<std::size_t(std::size_t bytes, std::uint64_t region)>;
  // This process's activity now, or nullopt when it cannot be read without
  // waiting (the manager is busy): called on the eviction-serving thread,
  // which must never block on the manager (the manager may hold its lock
  // while it waits for acknowledgements that this thread sends).
  using ActivitySource = std::function<std::optional<ClientActivity>()>;

  // Null when no daemon runs for this user and instance (then the process
  // works alone). Throws std::runtime_error when the node is full or has no
  // device options.device (the message names it and lists the node's).
  static std::shared_ptr<NodeMembership> connect(const NodeOptions& options, Role role, const std::string& name = {});
  ~NodeMembership();
  NodeMembership(const NodeMembership&) = delete;
  NodeMembership& operator=(const NodeMembership&) = delete;

  // Stops serving and frees the record (idempotent; the destructor does it).
  // The budget refuses and ignores everything afterwards: a process leaving
  // at exit may still free device memory while its context is torn down.
  void leave();
  // Frees the record now and sends `notice` to mqxd (a query's end,
  // QueryFinished), keeping the queues until leave(). Nothing when the
  // record is no longer this process's.
  void retire(const Message& notice);

  // Whether the node was lost under this process: its segment was written
  // over, shrunk or its lock is no mutex. The process then runs alone (as
  // after mqxd's death): nothing of the segment is touched again.
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // Checks the segment (its size by fstat, then its header) and leaves the
  // node when it is damaged; whether it is still usable.
  bool checkNode();
  // Leaves the node because of `why` (said once, as "mqx: <why>: leaving
  // the node; ..."): stops serving, removes this process's queues, never
  // touches the segment again.
  void loseNode(const std::string& why);
  // The same for a lock that failed: a held one (NodeLockHeld) says why
  // itself, any other means a damaged segment.
  void loseNode(const NodeLockUnusable& error);

  Role role() const { return role_; }
  std::uint32_t slot() const { return slot_; }
  // The node device this membership's record is on: a memory client's, the
  // one it draws on; a query's, the one it asked for, or kAnyDevice (mqxd
  // places it: AdmissionClient::placedDevice).
  std::uint32_t device() const { return device_; }
  NodeState& node() { return segment_->state(); }
  const IpcNames& names() const { return names_; }
  bool daemonAlive();
  // Whether this is the process that joined (not a fork() child of it, which
  // inherits the object but neither the record, the queues nor the thread).
  bool inJoiningProcess() const { return getpid() == joinedAs_; }
  // Where mqxd's admission answers and the other processes' eviction
  // acknowledgements arrive.
  MessageQueue& replies() { return *replies_; }

  // Memory role: installs (or, with nullptr, removes) what serves eviction
  // requests.
  void setEvictor(Evictor evictor);
  // Memory role: installs what the record's activity is read from; it is
  // published at most every 100 ms (with the heartbeat) and once more when
  // the source is replaced or removed (call with nullptr before the
  // manager goes: its last counters reach the node) and when the client
  // leaves.
  void setActivitySource(ActivitySource source);

  // Memory role, asking the others. Asks other memory clients of this
  // device (never those of another: their budgets are apart), largest
  // holder first, to free `bytes`, again and again while the node makes
  // progress (docs/daemon.md, "Queue or evict, never abort"): Freed when some
  // bytes were freed (or the node has room); MustYield at once when an older
  // client also waits for memory; NobodyElseHolds when no other live client
  // holds any budget; NoProgress when nothing changed on the node
  // (progress()) for stallLimit(daemon.eviction_timeout_ms).
  PeerReclaim requestEviction(std::size_t bytes);
  // A fingerprint of the other clients' progress (PeerRegions::progress).
  std::uint64_t progress();
  // The device's use and the other clients on it that hold budget or wait
  // for memory, largest first, in one line.
  std::string describeNode();
  // Asks the client in `ownerSlot` to evict `region` (or its best
  // alternative) for `bytes`; waits for its acknowledgement at most
  // daemon.eviction_timeout_ms. The bytes it freed.
  std::size_t requestEvictionOf(std::uint32_t ownerSlot, std::uint64_t region, std::size_t bytes);
  // Whether another live memory client of this device, of older arrival,
  // waits for memory.
  bool mustYield();

private:
  NodeMembership(const NodeOptions& options, Role role) : options_(options), role_(role) {}
  // Claims a free record; false when the node is full.
  bool claimRecord(const std::string& name);
  void serveEvictions(); // the thread's body: leaves the node when its lock is no mutex
  void serveEvictionsUntilStopped();
  // Publishes what the source says now (nothing when it is busy or unset).
  void publishActivity();
  void setBlocked(bool blocked);
  // Whether the holder `pid` is stopped (then it is not asked; logged once
  // per stop). Call with requestMutex_ held.
  bool skipStoppedHolder(pid_t pid, std::uint64_t held);
  // Sends one request and waits for its acknowledgement until `answerBy`;
  // nullopt when none came.
  std::optional<std::size_t> askToEvict(pid_t owner, std::uint64_t region, std::size_t bytes,
                                        std::chrono::steady_clock::time_point answerBy);

  NodeOptions options_;
  Role role_;
  pid_t joinedAs_ = getpid();
  IpcNames names_;
  std::unique_ptr<SharedSegment> segment_;
  std::uint32_t slot_ = kNoSlot;
  std::uint32_t device_ = kAnyDevice;
  std::unique_ptr<MessageQueue> replies_;
  std::unique_ptr<MessageQueue> evictions_;
  std::thread server_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> lost_{false};
  std::mutex evictorMutex_;
  Evictor evictor_;
  std::mutex activityMutex_;
  ActivitySource activitySource_;
  // Eviction requests refused so far (the serving thread's).
  std::uint64_t refusedRequests_ = 0;
  std::mutex requestMutex_;           // one outstanding eviction request per process
  std::vector<pid_t> stoppedHolders_; // reported stopped, not resumed since (requestMutex_)
  std::uint64_t nextSequence_ = 1;
};

} // namespace mqx::ipc
