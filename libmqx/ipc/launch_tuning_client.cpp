#include "ipc/launch_tuning_client.hpp"

#include <fmt/format.h>

#include "common/log.hpp"

namespace mqx::ipc {

using Clock = std::chrono::steady_clock;

std::string launchReplyQueue(const IpcNames& names, pid_t pid) {
  return fmt::format("/{}-launch-{}", names.prefix, pid);
}

std::shared_ptr<LaunchTuningClient> LaunchTuningClient::connect(const std::string& instance,
                                                                std::chrono::milliseconds replyTimeout) {
  IpcNames names = IpcNames::forInstance(instance, getuid());
  if (MessageQueue::openForSending(names.daemonQueue) == nullptr) return nullptr;
  std::shared_ptr<LaunchTuningClient> client(new LaunchTuningClient(std::move(names), replyTimeout));
  return client;
}

void LaunchTuningClient::leave() {
  std::lock_guard lock(mutex_);
  left_ = true;
  if (getpid() == createdBy_) replies_.reset(); // unlinks the queue
}

std::optional<device::TunedLaunch> LaunchTuningClient::tune(const device::TuningRequest& request,
                                                            std::uint64_t* ticket) {
  *ticket = 0;
  // A fork() child inherits the object but not the queue's name.
  if (getpid() != createdBy_) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (left_) return std::nullopt;
  // The reply queue is made on the first resizable launch: a process that
  // never launches one must not hold a queue (the node has 256 at most, and a
  // process killed before leave() would leave it behind).
  if (replies_ == nullptr) {
    try {
      replies_ = MessageQueue::create(launchReplyQueue(names_, getpid()), 8);
    } catch (const std::exception& error) {
      log(LogLevel::Warn, "no launch tuning ({}): '{}' keeps its parameters", error.what(), request.kernelName);
      return std::nullopt;
    }
  }
  Message message = Message::of(MessageKind::LaunchTuningRequest, getpid(), kNoSlot);
  message.sequence = nextTicket_++;
  message.setName(request.kernelName);
  LaunchTuningFields& fields = message.launch;
  fields.threads = request.threads;
  fields.registersPerThread = static_cast<std::uint32_t>(request.registersPerThread);
  fields.sharedMemoryPerBlock = static_cast<std::uint32_t>(request.sharedMemoryPerBlock);
  fields.maxThreadsPerBlock = static_cast<std::uint32_t>(request.maxThreadsPerBlock);
  fields.ownThreadsPerBlock = static_cast<std::uint32_t>(request.ownThreadsPerBlock);
  fields.device = request.device;
  fields.nodeDevice = request.nodeDevice;
  if (!sendTo(names_.daemonQueue, message)) {
    log(LogLevel::Debug, "no launch service (mqxd gone or busy): '{}' keeps its parameters", request.kernelName);
    return std::nullopt;
  }
  // Counted by the service from now on, answered or not.
  *ticket = message.sequence;
  const auto deadline = Clock::now() + timeout_;
  Message reply;
  while (Clock::now() < deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()) + std::chrono::milliseconds(1);
    if (!replies_->receive(&reply, left)) break;
    // A late answer to an earlier request that timed out is skipped.
    if (reply.kind != MessageKind::LaunchParameters || reply.sequence != message.sequence) continue;
    if (reply.launch.threadsPerBlock == 0) return std::nullopt;
    return device::TunedLaunch{message.sequence, reply.launch.gridBlocks, reply.launch.threadsPerBlock,
                               reply.launch.kernelsSolved};
  }
  log(LogLevel::Info,
      "mqxd's launch service did not answer within {} ms (kernelopt.reply_timeout_ms): '{}' keeps "
      "its parameters",
      timeout_.count(), request.kernelName);
  return std::nullopt;
}

void LaunchTuningClient::finished(std::uint64_t ticket) {
  if (ticket == 0 || getpid() != createdBy_) return;
  Message message = Message::of(MessageKind::LaunchFinished, getpid(), kNoSlot);
  message.sequence = ticket;
  // A lost report costs only until the service's lease expires.
  sendTo(names_.daemonQueue, message);
}

} // namespace mqx::ipc
