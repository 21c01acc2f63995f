// LaunchService: mqxd's launch optimizer service (docs/architecture.md decision
// 11; docs/kernelopt.md, "Launch service"). It keeps the resizable kernels
// pending or running on the node, as the processes report them, and answers
// each new one with the block size and grid that the knapsack paper's
// kernel-level optimizer (Algorithm 1) gives it together with the others;
// when they do not all fit an SM, with those of its batch from the
// batch-level optimizer (Algorithm 2). Each of the node's devices is solved
// apart: a request names its device (LaunchTuningFields::nodeDevice), and
// only the kernels of that device compete for its SMs. Kernels of a dead
// process, and kernels whose completion was not reported within the lease,
// stop counting.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ipc/log_rate_limit.hpp"
#include "ipc/messages.hpp"
#include "kernelopt/kernel_demand.hpp"

namespace mqx::daemon {

class LaunchService {
public:
  using Clock = std::chrono::steady_clock;

  // The launch parameters of one kernel; zero threads: keep its own.
  struct Answer {
    unsigned threadsPerBlock = 0;
    unsigned gridBlocks = 0;
    unsigned kernelsSolved = 0;
  };

  // `devices`: how many devices the node has (a request naming another is
  // refused: it keeps its parameters).
  LaunchService(std::chrono::milliseconds lease, std::uint32_t devices) : lease_(lease), devices_(devices) {}

  // Counts the kernel of (pid, ticket) as pending and answers it.
  Answer request(pid_t pid, std::uint64_t ticket, const ipc::LaunchTuningFields& kernel, Clock::time_point now);
  void finished(pid_t pid, std::uint64_t ticket);
  // Drops the kernels of processes `alive` denies, and those past the lease.
  // Returns the processes found dead (their queues are the caller's).
  std::vector<pid_t> expire(Clock::time_point now, const std::function<bool(pid_t)>& alive);

  // A message for the service; the reply to send to the sender, if any.
  std::optional<ipc::Message> handle(const ipc::Message& message);

  std::size_t pendingKernels() const { return entries_.size(); }
  // Those of one node device.
  std::size_t pendingKernels(std::uint32_t nodeDevice) const;

  // The demand the optimizer is given for a kernel: the threads its grid
  // launches, at most what it keeps resident alone at its own block size.
  static kernelopt::KernelDemand demandOf(const ipc::LaunchTuningFields& kernel);

private:
  struct Entry {
    pid_t pid;
    std::uint64_t ticket;
    ipc::LaunchTuningFields kernel;
    Clock::time_point expires;
  };

  // One line, at most one a second with the count of those not logged
  // (a process may send thousands of bad requests).
  void logRefusal(pid_t pid, const std::string& why);

  std::chrono::milliseconds lease_;
  std::uint32_t devices_;
  std::vector<Entry> entries_; // in arrival order
  ipc::LogRateLimit refusals_;
};

// Whether two requests are for the same device: the same node device and
// the same attributes (only kernels of one device compete for its SMs).
bool sameDevice(const ipc::LaunchTuningFields& a, const ipc::LaunchTuningFields& b);

// The parameters of the last kernel of `kernels` solved with the others:
// Algorithm 1 when they all fit an SM, else the batch of the batch-level plan
// that holds it. Zero threads when it fits nowhere.
LaunchService::Answer solveLast(const kernelopt::DeviceAttributes& device,
                                const std::vector<kernelopt::KernelDemand>& kernels);

} // namespace mqx::daemon
