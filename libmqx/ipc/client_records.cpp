#include "ipc/client_records.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/log.hpp"
#include "ipc/node_snapshot.hpp"

namespace mqx::ipc {
namespace {

bool live(const ClientRecord& record) { return record.state != ClientState::Free; }

} // namespace

std::uint32_t ClientRecords::slotOf(const ClientRecord& record) const {
  return static_cast<std::uint32_t>(&record - node_.clients);
}

const ClientRecord* ClientRecords::ownedBy(std::uint32_t slot, pid_t pid) const {
  if (slot >= kMaxClients) return nullptr;
  const ClientRecord& record = node_.clients[slot];
  return live(record) && record.pid == pid ? &record : nullptr;
}

ClientRecord* ClientRecords::owned(std::uint32_t slot, pid_t pid) {
  return const_cast<ClientRecord*>(std::as_const(*this).ownedBy(slot, pid));
}

bool ClientRecords::refuse(const char* transition, std::uint32_t slot, const char* why) const {
  const ClientRecord* record = slot < kMaxClients ? &node_.clients[slot] : nullptr;
  log(LogLevel::Error, "client record transition '{}' of record {} refused: {} (state {}, pid {})", transition, slot,
      why, record != nullptr ? toString(record->state) : "none", record != nullptr ? record->pid : 0);
  return false;
}

void ClientRecords::free(ClientRecord& record) {
  // A process killed between these stores counts its activity twice; the
  // state, the store that matters, is the last.
  node_.retiredActivity.addCounters(record.activity);
  record.activity = ClientActivity{};
  record.state = ClientState::Free;
}

std::optional<std::uint32_t> ClientRecords::claim(const Claim& claim) {
  if (claim.role != ClientState::Waiting && claim.role != ClientState::Memory) return std::nullopt;
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    ClientRecord& record = node_.clients[i];
    if (live(record)) continue;
    record.pid = claim.pid;
    record.budgetHeld = 0;
    record.observedPeak = 0;
    record.weightedDemand = 0;
    record.peakDemand = 0;
    record.heartbeatNs = monotonicNanoseconds();
    record.querySlot = claim.role == ClientState::Memory ? claim.querySlot : kNoSlot;
    record.blockedOnMemory = 0;
    record.admissionRequested = 0;
    record.placeOnArrival = 0;
    record.device = claim.device;
    record.activity = ClientActivity{};
    node_.published[i].clear();
    record.arrival = node_.nextArrival++;
    std::memset(record.name, 0, sizeof record.name);
    std::memcpy(record.name, claim.name.data(), std::min(claim.name.size(), sizeof record.name - 1));
    // The state last: until this store the record is free to everyone.
    record.state = claim.role;
    return i;
  }
  return std::nullopt;
}

bool ClientRecords::declareDemand(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr) return false;
  record->weightedDemand = weighted;
  record->peakDemand = peak;
  return true;
}

bool ClientRecords::requestAdmission(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr || record->state == ClientState::Memory) return false;
  record->weightedDemand = weighted;
  record->peakDemand = peak;
  record->admissionRequested = 1; // the last store: the demand above is what admission sees
  return true;
}

bool ClientRecords::requestPlacement(std::uint32_t slot, pid_t pid, std::uint64_t weighted, std::uint64_t peak) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr || record->state != ClientState::Waiting) return false;
  record->weightedDemand = weighted;
  record->peakDemand = peak;
  record->placeOnArrival = 1;
  record->admissionRequested = 1; // the last store: the demand above is what placement and admission see
  return true;
}

bool ClientRecords::withdrawAdmissionRequest(std::uint32_t slot, pid_t pid) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr) return false;
  record->admissionRequested = 0;
  return true;
}

bool ClientRecords::beat(std::uint32_t slot, pid_t pid) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr) return false;
  record->heartbeatNs = monotonicNanoseconds();
  return true;
}

bool ClientRecords::publishActivity(std::uint32_t slot, pid_t pid, const ClientActivity& activity) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr || record->state != ClientState::Memory) return false;
  record->activity = activity;
  return true;
}

bool ClientRecords::setBlockedOnMemory(std::uint32_t slot, pid_t pid, bool blocked) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr) return false;
  record->blockedOnMemory = blocked ? 1 : 0;
  return true;
}

bool ClientRecords::acquireBudget(std::uint32_t slot, pid_t pid, std::uint64_t bytes) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr || record->state != ClientState::Memory) return false;
  if (node_.usedBytes(record->device) + bytes > node_.capacityOf(record->device)) return false;
  record->budgetHeld += bytes; // one store: nothing to repair if killed here
  return true;
}

bool ClientRecords::releaseBudget(std::uint32_t slot, pid_t pid, std::uint64_t bytes) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr || record->state != ClientState::Memory) return false;
  record->budgetHeld -= std::min(bytes, record->budgetHeld);
  return true;
}

std::optional<std::uint64_t> ClientRecords::leave(std::uint32_t slot, pid_t pid) {
  ClientRecord* record = owned(slot, pid);
  if (record == nullptr) return std::nullopt;
  const std::uint64_t held = record->budgetHeld;
  free(*record);
  return held;
}

bool ClientRecords::setDemand(std::uint32_t slot, std::uint64_t weighted, std::uint64_t peak) {
  if (slot >= kMaxClients) return refuse("set demand", slot, "no such record");
  ClientRecord& record = node_.clients[slot];
  if (!live(record)) return refuse("set demand", slot, "the record is free");
  record.weightedDemand = weighted;
  record.peakDemand = peak;
  return true;
}

bool ClientRecords::learnDemand(std::uint32_t slot, std::uint64_t bytes) {
  if (slot >= kMaxClients) return refuse("learn demand", slot, "no such record");
  ClientRecord& record = node_.clients[slot];
  if (record.state != ClientState::Waiting) return refuse("learn demand", slot, "not a waiting query");
  if (record.weightedDemand != 0 || record.peakDemand != 0) return false; // it declared its own
  record.weightedDemand = bytes;
  record.peakDemand = bytes;
  return true;
}

bool ClientRecords::place(std::uint32_t slot, std::uint32_t device) {
  constexpr const char* kName = "place on arrival";
  if (slot >= kMaxClients) return refuse(kName, slot, "no such record");
  ClientRecord& record = node_.clients[slot];
  if (record.state != ClientState::Waiting || record.admissionRequested == 0 || record.placeOnArrival == 0)
    return refuse(kName, slot, "not a waiting query that asked to be placed");
  if (record.device != kAnyDevice) return refuse(kName, slot, "placed already");
  if (device >= node_.deviceCount || device >= kMaxDevices) return refuse(kName, slot, "no such device");
  record.device = device;
  return true;
}

bool ClientRecords::admit(std::uint32_t slot, std::uint32_t device) {
  constexpr const char* kName = "admit";
  if (slot >= kMaxClients) return refuse(kName, slot, "no such record");
  ClientRecord& record = node_.clients[slot];
  if (record.state != ClientState::Waiting || record.admissionRequested == 0)
    return refuse(kName, slot, "not a waiting query that asked for admission");
  if (device >= node_.deviceCount || device >= kMaxDevices) return refuse(kName, slot, "no such device");
  record.device = device; // before the state: a running query is always on its device
  record.state = ClientState::Running;
  return true;
}

bool ClientRecords::observePeak(std::uint32_t slot, std::uint64_t bytes) {
  if (slot >= kMaxClients) return refuse("observe peak", slot, "no such record");
  ClientRecord& record = node_.clients[slot];
  if (record.state != ClientState::Running) return refuse("observe peak", slot, "not a running query");
  record.observedPeak = std::max(record.observedPeak, bytes);
  return true;
}

std::uint64_t ClientRecords::reclaimDead(std::uint32_t slot) {
  if (slot >= kMaxClients || !live(node_.clients[slot])) {
    refuse("reclaim", slot, "no record in use");
    return 0;
  }
  ClientRecord& record = node_.clients[slot];
  const std::uint64_t held = record.budgetHeld;
  node_.reclaimedBytes += held;
  ++node_.deadClients;
  free(record);
  return held;
}

} // namespace mqx::ipc
