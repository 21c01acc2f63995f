// ClientRecords: the one writer of the node's client records
// (NodeState::clients, node_state.hpp). Every change of a record is one of
// the named transitions below; the daemon (mqxd) and the clients
// (NodeMembership, AdmissionClient, SharedDeviceBudget) call them and only
// read the records themselves.
//
// A record's life:
//
//   Free --claim--> Waiting (a query: mqx-run, mqx.Client)
//                   Memory  (a process with a memory manager)
//   Waiting --requestAdmission--> Waiting and asking (admissionRequested)
//   Waiting and asking --withdrawAdmissionRequest--> Waiting
//   Waiting and asking, placeOnArrival --place (mqxd)--> Waiting on a device
//   Waiting and asking --admit (mqxd)--> Running, on a device
//   Waiting, Running, Memory --leave (its own process)--> Free
//                            --reclaimDead (mqxd)--> Free
//
// Beside the state, a live record carries its demand (declareDemand,
// requestAdmission, setDemand, learnDemand), a Memory record its budget
// (acquireBudget, releaseBudget), its activity (publishActivity) and whether
// it waits for memory (setBlockedOnMemory), a Running record the most its
// processes held (observePeak), and every record a heartbeat (beat).
//
// The rules of the segment hold for each transition: it is called with the
// node's lock held (NodeState::lock), and each of its stores leaves the
// record valid, the one that makes a record visible or free to others
// last (a process killed between two stores leaves nothing to repair:
// RobustMutex). A transition that does not apply (the record is not the
// caller's, or not in the state it starts from) changes nothing and
// answers false. A client's own transitions take its pid: its record may
// have been reclaimed, and claimed again by another process, meanwhile.
// mqxd's transitions follow a check of the same record under the same
// lock, so their refusal is a bug in mqx, which is logged.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "ipc/node_state.hpp"

namespace mqx::ipc {

class ClientRecords {
public:
  explicit ClientRecords(NodeState& node) : node_(node) {}

  const ClientRecord& operator[](std::uint32_t slot) const { return node_.clients[slot]; }
  // The slot of `record`, which is one of this node's records.
  std::uint32_t slotOf(const ClientRecord& record) const;
  // `slot`'s record when it is `pid`'s and in use; null otherwise (freed,
  // or reclaimed and claimed by another process, or no slot).
  const ClientRecord* ownedBy(std::uint32_t slot, pid_t pid) const;

  // --- A client's transitions of its own record ---

  // What a process claims a record as.
  struct Claim {
    pid_t pid = 0;
    ClientState role = ClientState::Waiting;  // Waiting (a query) or Memory
    std::uint32_t querySlot = kNoSlot;        // a memory client: the query it runs for
    std::uint32_t device = kAnyDevice;        // the node device, or kAnyDevice (a query mqxd places)
    std::string_view name;                    // truncated to kQueryNameBytes - 1
  };
  // Free -> Waiting or Memory: the first free record, emptied and stamped
  // with the next arrival; its published regions are cleared. The slot, or
  // nullopt when the node is full.
  std::optional<std::uint32_t> claim(const Claim& claim);

  // The demand of `pid`'s record (a query's declaration before it asks, or
  // a process's share of its query's demand), without asking for admission.
  bool declareDemand(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak);
  // Waiting: asks for admission with this demand (mqxd admits only records
  // that ask). A record admitted meanwhile (Running) takes the demand too.
  bool requestAdmission(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak);
  // Waiting only: asks for admission and to be placed on a device now
  // (placeOnArrival: a query started before its admission).
  bool requestPlacement(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak);
  // Waiting and asking -> Waiting: a query that gave up is not admitted.
  bool withdrawAdmissionRequest(std::uint32_t slot, pid_t pid);
  // The record's heartbeat: now.
  bool beat(std::uint32_t slot, pid_t pid);
  // Memory: what the process's manager did so far.
  bool publishActivity(std::uint32_t slot, pid_t pid, const ClientActivity& activity);
  // Whether the process waits for the others to free memory (mustYield).
  bool setBlockedOnMemory(std::uint32_t slot, pid_t pid, bool blocked);
  // Memory: `bytes` more of its device's budget, when the device has room.
  bool acquireBudget(std::uint32_t slot, pid_t pid, std::uint64_t bytes);
  // Memory: gives back `bytes` (at most what it holds).
  bool releaseBudget(std::uint32_t slot, pid_t pid, std::uint64_t bytes);
  // Any live state -> Free: the process leaves (a query's end included).
  // The bytes it still held, given back with the record, or nullopt when the
  // record was no longer `pid`'s.
  std::optional<std::uint64_t> leave(std::uint32_t slot, pid_t pid);

  // --- mqxd's transitions ---

  // The demand of a live record: a query's, as a message or its processes
  // say, or a memory client's share of its query's.
  bool setDemand(std::uint32_t slot, std::uint64_t weighted, std::uint64_t peak);
  // A waiting query that declares nothing: the demand learned from its
  // earlier runs. Nothing when it declared some.
  bool learnDemand(std::uint32_t slot, std::uint64_t bytes);
  // Waiting, asking, placeOnArrival, on no device yet -> on `device`.
  bool place(std::uint32_t slot, std::uint32_t device);
  // Waiting and asking -> Running on `device`.
  bool admit(std::uint32_t slot, std::uint32_t device);
  // Running: its processes hold `bytes` now; keeps the most.
  bool observePeak(std::uint32_t slot, std::uint64_t bytes);
  // Any live state -> Free: the client died. Its bytes count as reclaimed
  // and its activity stays in the node's totals. The bytes it held.
  std::uint64_t reclaimDead(std::uint32_t slot);

private:
  // `slot`'s record when it is `pid`'s and in use.
  ClientRecord* owned(std::uint32_t slot, pid_t pid);
  // A transition of mqxd that does not apply: said, and false.
  bool refuse(const char* transition, std::uint32_t slot, const char* why) const;
  // Frees `record`, keeping its activity counters in the node's totals.
  void free(ClientRecord& record);

  NodeState& node_;
};

} // namespace mqx::ipc
