// Fuzz target: IPC message decoding and mqxd's handling of what it decodes.
// Each input is what another process of the user could put on mqxd's
// request queue: after a first byte of 0, a message's leading bytes, padded
// with zeros (or cut) to the size of a message, so that the seeds stay
// messages when fields are added at the end; after any other first byte,
// the raw bytes as they are (wrong sizes included). They go through a real POSIX queue and the real
// receive path (ipc::MessageQueue, ipc::validMessage); what is accepted is
// handed to a real NodeDaemon (its own segment and queue, a private
// instance) whose segment holds a fixed set of client records. After each
// message the segment must show that a message never creates a record,
// never moves budget, never changes a record's state, and changes a query's
// demand only when the sender's pid is the registered pid of the slot it
// names (a message naming another client's record is refused).
#include <fcntl.h>
#include <mqueue.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "ipc/client_records.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/shared_segment.hpp"
#include "node_daemon.hpp"

namespace {

using namespace mqx::ipc;

// The records every input starts from: a waiting query, a running query, a
// process of the running query, a process of no query.
constexpr pid_t kFirstPid = 4000;
constexpr std::uint32_t kRecords = 4;

struct Harness {
  std::string instance = "fuzz" + std::to_string(getpid());
  std::string historyFile = "/tmp/mqx-fuzz-demand-" + std::to_string(getpid());
  std::unique_ptr<mqx::daemon::NodeDaemon> daemon;
  std::unique_ptr<SharedSegment> segment;
  std::unique_ptr<MessageQueue> inbox; // stands in for mqxd's queue: same size, same receive path
  mqd_t sender = static_cast<mqd_t>(-1);

  Harness() {
    mqx::setLogLevel(mqx::LogLevel::Error);
    mqx::Config config;
    config.daemonInstance = instance;
    config.daemonCapacity = std::size_t{64} << 20;
    config.demandStateFile = historyFile;
    daemon = std::make_unique<mqx::daemon::NodeDaemon>(config);
    segment = SharedSegment::open(daemon->names());
    inbox = MessageQueue::create(daemon->names().daemonQueue + "-fuzz", 8);
    sender = mq_open(inbox->name().c_str(), O_WRONLY | O_NONBLOCK);
    if (segment == nullptr || sender == static_cast<mqd_t>(-1)) std::abort();
  }
  ~Harness() {
    mq_close(sender);
    std::remove(historyFile.c_str());
  }

  // Through the records' own transitions, as their processes and mqxd
  // would make them.
  void resetRecords() {
    NodeState& node = segment->state();
    RobustLock lock(node.lock);
    ClientRecords records(node);
    for (std::uint32_t i = 0; i < kRecords; ++i)
      records.leave(i, kFirstPid + static_cast<pid_t>(i));
    const ClientState roles[kRecords] = {ClientState::Waiting, ClientState::Waiting, ClientState::Memory,
                                         ClientState::Memory};
    constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
    for (std::uint32_t i = 0; i < kRecords; ++i) {
      const pid_t pid = kFirstPid + static_cast<pid_t>(i);
      const std::string name = "q" + std::to_string(i);
      ClientRecords::Claim claim;
      claim.pid = pid;
      claim.role = roles[i];
      claim.querySlot = i == 2 ? 1 : kNoSlot;
      claim.device = 0; // the node's only device
      claim.name = name;
      if (records.claim(claim) != i || !records.declareDemand(i, pid, kMiB, kMiB)) std::abort();
      if (roles[i] == ClientState::Memory && !records.acquireBudget(i, pid, 2 * kMiB)) std::abort();
    }
    if (!records.requestAdmission(1, kFirstPid + 1, kMiB, kMiB) || !records.admit(1, 0)) std::abort(); // running
  }
};

Harness& harness() {
  static Harness instance;
  return instance;
}

[[noreturn]] void violated(const char* what, std::uint32_t slot) {
  std::fprintf(stderr, "message fuzzer: %s (record %u)\n", what, slot);
  std::abort();
}

void checkRecords(const ClientRecord (&before)[kMaxClients], const Message& message) {
  NodeState& node = harness().segment->state();
  RobustLock lock(node.lock);
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    const ClientRecord& now = node.clients[i];
    const ClientRecord& was = before[i];
    if (now.state != was.state || now.pid != was.pid) violated("a message changed a record's owner or state", i);
    if (now.budgetHeld != was.budgetHeld) violated("a message moved budget", i);
    if (now.querySlot != was.querySlot) violated("a message relinked a record", i);
    if (now.weightedDemand == was.weightedDemand && now.peakDemand == was.peakDemand) continue;
    // Changed: only the sender's own query (and a memory client's own
    // record, which keeps its share of the query's demand), and only when
    // the sender is the registered process of the slot it names.
    if (message.slot >= kMaxClients || node.clients[message.slot].pid != message.pid)
      violated("a demand changed on a message whose pid does not own its slot", i);
    const ClientRecord& sender = node.clients[message.slot];
    const bool process = sender.state == ClientState::Memory;
    const std::uint32_t own = process ? sender.querySlot : message.slot;
    if (own != i && !(process && i == message.slot)) violated("a demand changed on another client's record", i);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Harness& h = harness();
  h.resetRecords();
  ClientRecord before[kMaxClients];
  std::memcpy(before, h.segment->state().clients, sizeof before);

  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 0) bytes.resize(sizeof(Message), '\0');
  size = bytes.size();

  Message message;
  bool accepted = false;
  if (size <= sizeof(Message)) {
    // Through the queue: the receive path sees exactly what a sender wrote.
    if (mq_send(h.sender, bytes.data(), size, 0) != 0) std::abort();
    accepted = h.inbox->receive(&message, std::chrono::milliseconds(0));
    // Whatever the queue accepted, validMessage agrees with.
    std::string why;
    if (accepted && !validMessage(message, sizeof(Message), &why)) std::abort();
    if (accepted && size != sizeof(Message)) violated("a short message was accepted", 0);
  } else {
    // Longer than any queue message: only the validator can see it.
    std::memcpy(&message, bytes.data(), sizeof message);
    std::string why;
    if (validMessage(message, size, &why)) violated("an oversized message was accepted", 0);
  }
  if (!accepted) return 0;
  if (message.slot != kNoSlot && message.slot >= kMaxClients) violated("slot out of range accepted", message.slot);
  h.daemon->handle(message);
  checkRecords(before, message);
  return 0;
}
