// DaemonClient: a process's membership of the node that mqxd runs. It claims
// a client record in the segment, owns the process's queues (replies; and,
// for a memory client, eviction requests, served by a thread) and frees the
// record on destruction. Two roles:
//  - Query: mqx-run's record, which asks for admission (paper §5);
//  - Memory: a process with a MemoryManager; its device memory is drawn from
//    the node budget (SharedDeviceBudget) and other processes may ask it to
//    evict (ARCHITECTURE.md decision 8: only the owner's context can unmap).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.hpp"
#include "core/device_budget.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::ipc {

class DaemonClient : public std::enable_shared_from_this<DaemonClient> {
public:
  enum class Role { Query, Memory };
  // Frees up to the given bytes of this process's device memory for another
  // process; returns the bytes freed.
  using Evictor = std::function<std::size_t(std::size_t)>;

  // Null when no daemon runs for this user and instance (then the process
  // works alone). Throws std::runtime_error when the node is full.
  static std::shared_ptr<DaemonClient> connect(const Config& config, Role role, const std::string& name = {});
  ~DaemonClient();
  DaemonClient(const DaemonClient&) = delete;
  DaemonClient& operator=(const DaemonClient&) = delete;

  // Stops serving and frees the record (idempotent; the destructor does it).
  // The budget refuses and ignores everything afterwards: a process leaving
  // at exit may still free device memory while its context is torn down.
  void leave();

  std::uint32_t slot() const { return slot_; }
  NodeState& node() { return segment_->state(); }
  const IpcNames& names() const { return names_; }
  bool daemonAlive();

  // Memory role: the node budget, drawn through this client's record (the
  // budget keeps the client alive).
  std::shared_ptr<DeviceBudget> budget();
  // Installs (or, with nullptr, removes) what serves eviction requests.
  void setEvictor(Evictor evictor);
  // Asks other memory clients, largest holder first, to free `bytes`; waits
  // for their acknowledgements up to daemon.eviction_timeout_ms. True when
  // some bytes were freed.
  bool requestEviction(std::size_t bytes);

  // Query role: declares the demand and waits until mqxd admits the query.
  // False when the daemon went away meanwhile.
  bool waitForAdmission(std::uint64_t weightedDemand, std::uint64_t peakDemand);
  // Reports the end of the query (with the most device bytes its processes
  // held at once, for learned demand).
  void finishQuery();

  // Either role: the query's demand changed while it runs (paper §5: a
  // query's demand is updated as it executes). Sends DemandUpdate for the
  // query record: this client's own (Query role) or the query this process
  // runs for (Memory role, MQX_QUERY_SLOT); mqxd re-runs admission. False
  // when there is no query record to update or mqxd cannot be reached.
  bool updateDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand);

private:
  DaemonClient(const Config& config, Role role) : config_(config), role_(role) {}
  void serveEvictions();

  // Whether this is the process that joined (not a fork() child of it, which
  // inherits the object but neither the record, the queues nor the thread).
  bool inJoiningProcess() const { return getpid() == joinedAs_; }

  Config config_;
  Role role_;
  pid_t joinedAs_ = getpid();
  IpcNames names_;
  std::unique_ptr<SharedSegment> segment_;
  std::uint32_t slot_ = kNoSlot;
  std::unique_ptr<MessageQueue> replies_;
  std::unique_ptr<MessageQueue> evictions_;
  std::thread server_;
  std::atomic<bool> stopping_{false};
  std::mutex evictorMutex_;
  Evictor evictor_;
  std::mutex requestMutex_; // one outstanding eviction request per process
  std::uint64_t nextSequence_ = 1;
};

} // namespace mqx::ipc
