#include "launch_service.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <unistd.h>

#include "common/log.hpp"
#include "kernelopt/batch_optimizer.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"
#include "kernelopt/occupancy.hpp"

namespace mqx::daemon {
namespace {

using namespace mqx::kernelopt;

// Past this many counted kernels the oldest stop counting: a bound on the
// daemon's memory and solve time, whatever clients send.
constexpr std::size_t kMaxPendingKernels = 256;

unsigned toUnsigned(std::int64_t value) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(value, 0, std::numeric_limits<unsigned>::max()));
}

} // namespace

bool sameDevice(const ipc::LaunchTuningFields& a, const ipc::LaunchTuningFields& b) {
  return a.nodeDevice == b.nodeDevice && std::memcmp(&a.device, &b.device, sizeof a.device) == 0;
}

std::size_t LaunchService::pendingKernels(std::uint32_t nodeDevice) const {
  return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(),
                                                [&](const Entry& e) { return e.kernel.nodeDevice == nodeDevice; }));
}

KernelDemand LaunchService::demandOf(const ipc::LaunchTuningFields& kernel) {
  const DeviceLimits limits = DeviceLimits::fromAttributes(kernel.device);
  // The kernel's resources come from a message: within the device's limits,
  // or the occupancy arithmetic below overflows (found by tests/fuzz).
  auto within = [](std::uint32_t value, int limit, const char* what) {
    if (value > static_cast<std::uint32_t>(limit)) throw std::invalid_argument(std::string(what) + " out of range");
  };
  within(kernel.registersPerThread, limits.maxRegistersPerThread, "registers per thread");
  within(kernel.sharedMemoryPerBlock, limits.maxSharedMemoryPerBlock, "shared memory per block");
  within(kernel.maxThreadsPerBlock, limits.maxThreadsPerBlock, "threads per block");
  KernelDemand demand;
  demand.registersPerThread = static_cast<int>(kernel.registersPerThread);
  demand.sharedMemoryPerBlock = static_cast<int>(kernel.sharedMemoryPerBlock);
  demand.maxThreadsPerBlock = static_cast<int>(kernel.maxThreadsPerBlock);
  // A grid-stride kernel launched with more threads than the GPU holds only
  // wants what it would have resident alone; the launch's own block size
  // gives that ([CS] Eq. 2 times the SMs).
  const int ownBlock = std::clamp<int>(static_cast<int>(kernel.ownThreadsPerBlock), 1, limits.maxThreadsPerBlock);
  const Occupancy alone = computeOccupancy(limits, {demand.registersPerThread, demand.sharedMemoryPerBlock, ownBlock});
  const std::int64_t resident = std::int64_t{alone.activeBlocksPerSm} * ownBlock * limits.smCount;
  demand.threads = std::min<std::int64_t>(
      static_cast<std::int64_t>(std::min<std::uint64_t>(kernel.threads, std::numeric_limits<std::int64_t>::max())),
      std::max<std::int64_t>(resident, 1));
  if (demand.threads <= 0) demand.threads = 1;
  return demand;
}

LaunchService::Answer solveLast(const DeviceAttributes& device, const std::vector<KernelDemand>& kernels) {
  const DeviceLimits limits = DeviceLimits::fromAttributes(device);
  const std::size_t last = kernels.size() - 1;
  KernelLevelOptimizer together(limits);
  const KernelLevelSolution all = together.solve(kernels);
  if (all.feasible) {
    const KernelLaunch& launch = all.launches[last];
    return {toUnsigned(launch.threadsPerBlock), toUnsigned(launch.gridBlocks), toUnsigned(kernels.size())};
  }
  BatchOptimizer batches(limits);
  const BatchPlan plan = batches.plan(kernels);
  for (const Batch& batch : plan.batches) {
    auto at = std::find(batch.kernels.begin(), batch.kernels.end(), last);
    if (at == batch.kernels.end()) continue;
    const KernelLaunch& launch = batch.solution.launches[static_cast<std::size_t>(at - batch.kernels.begin())];
    return {toUnsigned(launch.threadsPerBlock), toUnsigned(launch.gridBlocks), toUnsigned(batch.kernels.size())};
  }
  return {}; // unplaceable: an SM cannot hold it even alone
}

void LaunchService::logRefusal(pid_t pid, const std::string& why) {
  // Anyone of the user can send these in bulk: at most a line a second.
  if (const auto notLogged = refusals_.admit())
    log(LogLevel::Warn, "mqxd: launch request of process {} refused ({}): it keeps its parameters{}", pid, why,
        *notLogged != 0 ? fmt::format(" ({} more refused since the last line, not logged)", *notLogged)
                        : std::string());
}

LaunchService::Answer LaunchService::request(pid_t pid, std::uint64_t ticket, const ipc::LaunchTuningFields& kernel,
                                             Clock::time_point now) {
  if (kernel.nodeDevice >= devices_) {
    logRefusal(pid, fmt::format("names device {}, the node has {}", kernel.nodeDevice, devices_));
    return {};
  }
  std::vector<KernelDemand> kernels;
  try {
    for (const Entry& entry : entries_)
      if (sameDevice(entry.kernel, kernel)) kernels.push_back(demandOf(entry.kernel));
    kernels.push_back(demandOf(kernel));
  } catch (const std::invalid_argument& error) {
    logRefusal(pid, error.what());
    return {};
  }
  Answer answer;
  try {
    answer = solveLast(kernel.device, kernels);
  } catch (const std::invalid_argument& error) {
    logRefusal(pid, error.what());
    return {};
  }
  if (entries_.size() >= kMaxPendingKernels) entries_.erase(entries_.begin());
  entries_.push_back({pid, ticket, kernel, now + lease_});
  return answer;
}

void LaunchService::finished(pid_t pid, std::uint64_t ticket) {
  std::erase_if(entries_, [&](const Entry& entry) { return entry.pid == pid && entry.ticket == ticket; });
}

std::vector<pid_t> LaunchService::expire(Clock::time_point now, const std::function<bool(pid_t)>& alive) {
  std::vector<pid_t> dead;
  std::erase_if(entries_, [&](const Entry& entry) {
    if (std::find(dead.begin(), dead.end(), entry.pid) != dead.end()) return true;
    if (!alive(entry.pid)) {
      dead.push_back(entry.pid);
      return true;
    }
    if (entry.expires <= now) {
      log(LogLevel::Info, "mqxd: kernel {} of process {} passed its lease (kernelopt.lease_ms) unreported",
          entry.ticket, entry.pid);
      return true;
    }
    return false;
  });
  return dead;
}

std::optional<ipc::Message> LaunchService::handle(const ipc::Message& message) {
  using ipc::MessageKind;
  if (message.kind == MessageKind::LaunchFinished) {
    finished(message.pid, message.sequence);
    return std::nullopt;
  }
  if (message.kind != MessageKind::LaunchTuningRequest) return std::nullopt;
  const Answer answer = request(message.pid, message.sequence, message.launch, Clock::now());
  ipc::Message reply = ipc::Message::of(MessageKind::LaunchParameters, getpid(), ipc::kNoSlot);
  reply.sequence = message.sequence;
  reply.launch = message.launch;
  reply.launch.threadsPerBlock = answer.threadsPerBlock;
  reply.launch.gridBlocks = answer.gridBlocks;
  reply.launch.kernelsSolved = answer.kernelsSolved;
  log(LogLevel::Debug, "mqxd: kernel '{}' of process {}: {} blocks of {} threads ({} kernels together)", message.name,
      message.pid, answer.gridBlocks, answer.threadsPerBlock, answer.kernelsSolved);
  return reply;
}

} // namespace mqx::daemon
