// LaunchTuningClient: the LaunchTuner of a process on mqxd's node. It asks
// the daemon's launch service (daemon/launch_service.hpp) for a resizable
// kernel's launch parameters and reports the kernel's completion. It has its
// own reply queue, so that launch replies never mix with admission and
// eviction traffic. No daemon, a full queue or no reply within
// kernelopt.reply_timeout_ms: the launch keeps its own parameters.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "device/launch_tuner.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/message_queue.hpp"

namespace mqx::ipc {

// The queue on which process `pid` receives launch parameters.
std::string launchReplyQueue(const IpcNames& names, pid_t pid);

class LaunchTuningClient final : public device::LaunchTuner {
public:
  // Null when no mqxd runs for this user and `instance` (daemon.instance).
  // `replyTimeout`: kernelopt.reply_timeout_ms.
  static std::shared_ptr<LaunchTuningClient> connect(const std::string& instance,
                                                     std::chrono::milliseconds replyTimeout);

  std::optional<device::TunedLaunch> tune(const device::TuningRequest& request, std::uint64_t* ticket) override;
  void finished(std::uint64_t ticket) override;
  // Removes the reply queue; later requests keep their own parameters. At
  // exit: the hook layer's runtime is never destroyed.
  void leave();

private:
  LaunchTuningClient(IpcNames names, std::chrono::milliseconds timeout) : names_(std::move(names)), timeout_(timeout) {}

  IpcNames names_;
  std::chrono::milliseconds timeout_;
  pid_t createdBy_ = getpid();
  std::mutex mutex_; // one request in flight per process
  std::unique_ptr<MessageQueue> replies_;
  std::uint64_t nextTicket_ = 1;
  bool left_ = false;
};

// The launch tuner of one node device (docs/daemon.md, "Several GPUs"):
// the process's LaunchTuningClient, with every request naming `nodeDevice`
// (NodeMembership::device() of the device's membership), so that mqxd's
// launch service solves the kernels of each device apart. One per device
// of a process; they share the client and its reply queue.
class NodeDeviceLaunchTuner final : public device::LaunchTuner {
public:
  NodeDeviceLaunchTuner(std::shared_ptr<device::LaunchTuner> client, std::uint32_t nodeDevice)
      : client_(std::move(client)), nodeDevice_(nodeDevice) {}
  std::optional<device::TunedLaunch> tune(const device::TuningRequest& request, std::uint64_t* ticket) override {
    device::TuningRequest onDevice = request;
    onDevice.nodeDevice = nodeDevice_;
    return client_->tune(onDevice, ticket);
  }
  void finished(std::uint64_t ticket) override { client_->finished(ticket); }

private:
  std::shared_ptr<device::LaunchTuner> client_;
  std::uint32_t nodeDevice_;
};

} // namespace mqx::ipc
