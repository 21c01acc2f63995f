#include "device/resizable_launches.hpp"

#include "common/log.hpp"

namespace mqx::device {

ResizableLaunches::ResizableLaunches(const std::vector<std::string>& resizableNames, std::shared_ptr<LaunchTuner> tuner)
    : names_(resizableNames.begin(), resizableNames.end()), tuner_(std::move(tuner)) {}

ResizableLaunches::~ResizableLaunches() {
  // Whatever is still counted is reported, so that the service does not
  // wait for the lease to expire.
  std::lock_guard lock(mutex_);
  for (const Pending& entry : pending_)
    tuner_->finished(entry.ticket);
}

void ResizableLaunches::declare(FunctionHandle function) {
  std::lock_guard lock(mutex_);
  declared_.insert(function);
}

void ResizableLaunches::declareName(std::string name) {
  std::lock_guard lock(mutex_);
  names_.insert(std::move(name));
}

bool ResizableLaunches::isResizable(FunctionHandle function, std::string_view name) const {
  std::lock_guard lock(mutex_);
  return declared_.contains(function) || (!name.empty() && names_.contains(name));
}

std::uint64_t ResizableLaunches::tune(KernelLaunch& launch, const KernelProperties& kernel,
                                      const kernelopt::DeviceAttributes& device, unsigned* kernelsSolved) {
  if (kernelsSolved != nullptr) *kernelsSolved = 0;
  poll();
  // A grid-stride loop strides over x; a launch in y or z is indexed by
  // them, so only x may change.
  if (launch.grid[1] != 1 || launch.grid[2] != 1 || launch.block[1] != 1 || launch.block[2] != 1) {
    log(LogLevel::Debug, "kernel '{}' is resizable but launched in more than one dimension: kept", kernel.name);
    return 0;
  }
  TuningRequest request;
  request.kernelName = kernel.name;
  request.registersPerThread = kernel.registersPerThread;
  request.sharedMemoryPerBlock = kernel.staticSharedBytes + static_cast<int>(launch.sharedBytes);
  request.maxThreadsPerBlock = kernel.maxThreadsPerBlock;
  request.ownThreadsPerBlock = static_cast<int>(launch.block[0]);
  request.threads = std::uint64_t{launch.grid[0]} * launch.block[0];
  request.device = device;
  std::uint64_t ticket = 0;
  const auto tuned = tuner_->tune(request, &ticket);
  if (tuned && tuned->gridBlocks > 0 && tuned->threadsPerBlock > 0) {
    log(LogLevel::Debug, "kernel '{}': {}x{} launched as {}x{} ({} kernels together)", kernel.name, launch.grid[0],
        launch.block[0], tuned->gridBlocks, tuned->threadsPerBlock, tuned->kernelsSolved);
    launch.grid[0] = tuned->gridBlocks;
    launch.block[0] = tuned->threadsPerBlock;
    if (kernelsSolved != nullptr) *kernelsSolved = tuned->kernelsSolved;
  }
  return ticket;
}

void ResizableLaunches::launched(std::uint64_t ticket, CompletionProbe probe) {
  if (ticket == 0) return;
  if (!probe) {
    tuner_->finished(ticket);
    return;
  }
  std::lock_guard lock(mutex_);
  pending_.push_back({ticket, std::move(probe)});
}

void ResizableLaunches::pollLocked(std::vector<std::uint64_t>* done) {
  std::erase_if(pending_, [&](const Pending& entry) {
    if (!entry.probe()) return false;
    done->push_back(entry.ticket);
    return true;
  });
}

void ResizableLaunches::poll() {
  std::vector<std::uint64_t> done;
  {
    std::lock_guard lock(mutex_);
    pollLocked(&done);
  }
  for (std::uint64_t ticket : done)
    tuner_->finished(ticket);
}

std::size_t ResizableLaunches::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

} // namespace mqx::device
