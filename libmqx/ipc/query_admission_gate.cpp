#include "ipc/query_admission_gate.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/log.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/robust_mutex.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::ipc {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<unsigned long> decimal(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return value;
}

AdmissionGateOutcome refused(std::string why) {
  AdmissionGateOutcome outcome;
  outcome.refusal = std::move(why);
  return outcome;
}

} // namespace

std::optional<AwaitedAdmission> awaitedAdmissionFromEnvironment() {
  const auto owner = decimal(std::getenv("MQX_AWAIT_ADMISSION"));
  if (!owner) return std::nullopt;
  const auto slot = decimal(std::getenv("MQX_QUERY_SLOT"));
  // A record that cannot be named cannot be waited on: refused below rather
  // than run without admission.
  return AwaitedAdmission{slot && *slot < kMaxClients ? static_cast<std::uint32_t>(*slot) : kNoSlot,
                          static_cast<pid_t>(*owner)};
}

void exportPlacedDevice(const std::string& identity) {
  if (identity.starts_with("GPU-")) setenv("CUDA_VISIBLE_DEVICES", identity.c_str(), 1);
  if (identity.starts_with("sim-")) setenv("MQX_SIM_DEVICE", identity.c_str(), 1);
}

AdmissionGateOutcome waitForQueryAdmission(NodeState& node, const AwaitedAdmission& awaited,
                                           std::chrono::milliseconds pollInterval) {
  if (awaited.querySlot == kNoSlot)
    return refused("MQX_AWAIT_ADMISSION is set but MQX_QUERY_SLOT names no record of the node");
  const auto start = Clock::now();
  bool said = false;
  for (;;) {
    {
      RobustLock lock(node.lock);
      const ClientRecord& record = node.clients[awaited.querySlot];
      const bool ours =
          record.pid == awaited.owner && (record.state == ClientState::Waiting || record.state == ClientState::Running);
      if (!ours)
        return refused(fmt::format("the query's record on the node is gone (mqx-run pid {} stopped waiting for "
                                   "admission, or it died)",
                                   awaited.owner));
      if (record.state == ClientState::Running) {
        AdmissionGateOutcome outcome;
        outcome.admitted = true;
        outcome.deviceCount = node.deviceCount;
        if (record.device < node.deviceCount && record.device < kMaxDevices) {
          outcome.device = record.device;
          outcome.deviceIdentity = node.identityOf(record.device);
        }
        return outcome;
      }
    }
    if (!processAlive(node.daemonPid)) return refused("mqxd went away before it admitted the query");
    if (!processAlive(awaited.owner))
      return refused(fmt::format("mqx-run (pid {}) is gone before the query was admitted", awaited.owner));
    if (!said && Clock::now() - start >= std::chrono::seconds(1)) {
      log(LogLevel::Info,
          "waiting for mqxd to admit the query (record {}, mqx-run pid {}) before this process uses a device",
          awaited.querySlot, awaited.owner);
      said = true;
    }
    std::this_thread::sleep_for(pollInterval);
  }
}

AdmissionGateOutcome passAdmissionGate(const std::string& instance) {
  const auto awaited = awaitedAdmissionFromEnvironment();
  if (!awaited) {
    AdmissionGateOutcome open;
    open.admitted = true; // not started before admission: the gate is open
    return open;
  }
  const auto segment = SharedSegment::open(IpcNames::forInstance(instance, getuid()));
  if (segment == nullptr) return refused("mqxd's node is gone before it admitted the query");
  AdmissionGateOutcome outcome = waitForQueryAdmission(segment->state(), *awaited);
  if (outcome.admitted) exportPlacedDevice(outcome.deviceIdentity);
  return outcome;
}

} // namespace mqx::ipc
