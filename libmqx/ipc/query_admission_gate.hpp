// The admission gate of a query started before mqxd admitted it
// (daemon.start_before_admission; docs/daemon.md, "Starting before
// admission"). mqx-run then runs the query's program at once, so that its
// start-up (an interpreter, imports, reading data) overlaps the wait, and
// exports MQX_AWAIT_ADMISSION (its pid: the owner of the query's record)
// with MQX_QUERY_SLOT (the record). Every process of the query passes this
// gate before it touches a device: libmqx.so's cuInit, and every memory
// client's join of the node. Until the record says the query runs, nothing
// of the query is on a device.
//
// The wait is bounded by the others' lifetimes, never silent: it ends when
// mqxd admits the query, when the record is no longer the query's (mqx-run
// gave up at its admission timeout and withdrew it, or mqx-run died and
// mqxd reclaimed it), or when mqxd is gone. It says once, after a second,
// what it waits for.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ipc/node_state.hpp"

namespace mqx::ipc {

// The process's part in a query started before admission: the record and its
// owner, from the environment mqx-run set. Nullopt for a process not started
// so (the gate is open).
struct AwaitedAdmission {
  std::uint32_t querySlot = kNoSlot;
  pid_t owner = 0; // mqx-run
};
std::optional<AwaitedAdmission> awaitedAdmissionFromEnvironment();

struct AdmissionGateOutcome {
  bool admitted = false;
  // Admitted: the node device mqxd placed the query on (its index, its
  // identity, and how many the node has), kAnyDevice and "" when the record
  // names none.
  std::uint32_t device = kAnyDevice;
  std::string deviceIdentity;
  std::uint32_t deviceCount = 0;
  std::string refusal; // not admitted: why, in one line
};

// What a process of the query is told of the device it runs on, before its
// driver starts: a GPU's UUID as CUDA_VISIBLE_DEVICES (the CUDA runtime and
// driver then show that GPU alone, as device 0), a simulated device's name
// as MQX_SIM_DEVICE (sim.device); nothing for "". mqx-run's (for a query
// admitted before it starts) and the gate's.
void exportPlacedDevice(const std::string& identity);

// Waits on the node's record until the query is admitted or can no longer
// be (above). Polls every `pollInterval`: a wait of a second or more
// (admission waits for a running query to end) loses at most that.
AdmissionGateOutcome waitForQueryAdmission(NodeState& node, const AwaitedAdmission& awaited,
                                           std::chrono::milliseconds pollInterval = std::chrono::milliseconds(5));

// The gate of a process that has not joined the node of `instance` (libmqx's
// cuInit, before the driver starts): admitted at once when the process was
// not started before admission; else waits (a node that cannot be opened is
// a refusal: mqxd is gone) and, once admitted, exports the placed device
// (exportPlacedDevice).
AdmissionGateOutcome passAdmissionGate(const std::string& instance);

} // namespace mqx::ipc
