// NodeDaemon: what mqxd is. It owns the node's segment and request queue,
// registers clients (they claim records in the segment), reclaims the budget
// of clients that died (ARCHITECTURE.md decision 9: within one liveness
// interval, 100 ms by default), and admits queries (decision 10, paper §5).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "admission_policy.hpp"
#include "config/config.hpp"
#include "demand_history.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/shared_segment.hpp"
#include "launch_service.hpp"
#include "mps_control.hpp"

namespace mqx::daemon {

class NodeDaemon {
public:
  // Creates the segment and queue; throws std::runtime_error when another
  // mqxd of this user and instance is alive.
  explicit NodeDaemon(const Config& config);
  ~NodeDaemon();

  // Serves until `stop` becomes true (checked at least every liveness
  // interval); the destructor then removes the segment and queue.
  void run(const std::atomic<bool>& stop);

  std::uint64_t capacity() const { return capacity_; }
  const ipc::IpcNames& names() const { return names_; }

  // Acts on one message that passed validMessage(); nothing in it is trusted
  // beyond that (the segment is the truth). Public for the message fuzzer
  // (tests/fuzz), which drives it directly.
  void handle(const ipc::Message& message);

private:
  void reclaimDeadClients();
  void observeQueries();
  std::array<std::uint64_t, ipc::kMaxClients> heldByQuery();
  void admitPostponed();

  Config config_;
  ipc::IpcNames names_;
  std::uint64_t capacity_ = 0;
  AdmissionPolicy policy_;
  DemandHistory history_;
  std::unique_ptr<ipc::SharedSegment> segment_;
  std::unique_ptr<ipc::MessageQueue> requests_;
  LaunchService launches_;
  std::unique_ptr<MpsControl> mps_; // last: started once the node is set up, stopped first
};

} // namespace mqx::daemon
