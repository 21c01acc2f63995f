#include "ipc/node_membership.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/log.hpp"
#include "ipc/client_records.hpp"
#include "ipc/query_admission_gate.hpp"

namespace mqx::ipc {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The query record that mqx-run claimed for the query this process belongs to.
std::uint32_t querySlotFromEnvironment(NodeState& node) {
  const char* text = std::getenv("MQX_QUERY_SLOT");
  if (text == nullptr || *text == '\0') return kNoSlot;
  char* end = nullptr;
  const unsigned long slot = std::strtoul(text, &end, 10);
  if (*end != '\0' || slot >= kMaxClients) return kNoSlot;
  return static_cast<std::uint32_t>(slot);
}

// Why an eviction request must be refused, or null when it may be served:
// it must come from a live memory client of this node (the pid registered in
// the record its slot names) on this process's device (budgets of different
// devices are apart: freeing memory here gives the sender nothing), name a
// region this process published (or none), and ask for no more than the
// device has. Call with the node lock held.
constexpr const char* kNotAMember = "not from the registered memory client of the slot it names";

const char* evictRequestRefusal(const NodeState& node, std::uint32_t ownSlot, const Message& request) {
  if (request.slot >= kMaxClients || request.slot == ownSlot) return kNotAMember;
  const ClientRecord& sender = node.clients[request.slot];
  if (sender.state != ClientState::Memory || sender.pid != request.pid) return kNotAMember;
  const std::uint32_t device = node.clients[ownSlot].device;
  if (sender.device != device) return "from a memory client of another device";
  if (request.bytes > node.capacityOf(device)) return "asks for more bytes than the device has";
  if (request.region == 0) return nullptr;
  RegionSummary summary;
  for (const PublishedRegion& entry : node.published[ownSlot].entries)
    if (entry.read(&summary) && summary.region == request.region) return nullptr;
  return "names a region this process does not hold";
}

Message acknowledgement(const Message& request, std::size_t freed) {
  Message ack = Message::of(MessageKind::EvictAck, getpid(), kNoSlot);
  ack.sequence = request.sequence;
  ack.bytes = freed;
  return ack;
}

} // namespace

std::shared_ptr<NodeMembership> NodeMembership::connect(const NodeOptions& options, Role role,
                                                        const std::string& name) {
  std::shared_ptr<NodeMembership> member(new NodeMembership(options, role));
  member->names_ = IpcNames::forInstance(options.instance, getuid());
  std::string damage;
  bool anotherVersion = false, notOurs = false;
  member->segment_ = SharedSegment::open(member->names_, &damage, &anotherVersion, &notOurs);
  if (member->segment_ == nullptr) {
    // Someone else's object at the node's name (or an unusable runtime
    // directory): never joined, said once per process.
    if (notOurs) {
      static std::once_flag said;
      std::call_once(said, [&] { log(LogLevel::Error, "mqx: {}; running without the node", damage); });
    }
    // A node of another mqx (its segment's version or layout differs): not
    // joined and not touched, with the one line that says why (issue 18;
    // garbage stays silent here, mqxd replaces it and says so).
    if (anotherVersion)
      log(LogLevel::Error,
          "the node's segment {} was written by another version of mqx ({}): not joining it; run this "
          "version's mqxd, or the query with the binaries of the running one",
          member->names_.segment, damage);
    return nullptr;
  }
  if (!member->daemonAlive()) return nullptr;
  // The device first: a process that names none the node has is refused
  // before anything of it is on the node.
  const NodeState& node = member->node();
  // A process of a query started before admission joins once it is admitted
  // (query_admission_gate.hpp), and then on the device mqxd placed the query
  // on unless it names one.
  std::uint32_t placed = kAnyDevice;
  if (role == Role::Memory)
    if (const auto awaited = awaitedAdmissionFromEnvironment()) {
      const AdmissionGateOutcome gate = waitForQueryAdmission(member->node(), *awaited);
      if (!gate.admitted) throw std::runtime_error("mqx: the query was not admitted: " + gate.refusal);
      placed = gate.device;
    }
  if (role == Role::Query && options.device.empty()) {
    member->device_ = kAnyDevice; // mqxd places it
  } else if (options.device.empty() && placed != kAnyDevice) {
    member->device_ = placed;
  } else if (const auto device = findDevice(node, options.device)) {
    member->device_ = *device;
  } else {
    throw UnknownDevice(
        fmt::format("mqx: the node has no device '{}' (its devices: {})", options.device, listDevices(node)));
  }
  const pid_t self = getpid();
  // Queues first: a record is visible to others only once it can be reached.
  member->replies_ = MessageQueue::create(member->names_.replyQueue(self));
  if (role == Role::Memory) member->evictions_ = MessageQueue::create(member->names_.evictQueue(self));
  if (!member->claimRecord(name)) throw std::runtime_error("mqx: the node has no free client record (64 in use)");
  if (role == Role::Memory) member->server_ = std::thread([raw = member.get()] { raw->serveEvictions(); });
  if (member->device_ == kAnyDevice)
    log(LogLevel::Info, "joined node {} as client {} (devices: {})", member->names_.segment, member->slot_,
        listDevices(node));
  else
    log(LogLevel::Info, "joined node {} as client {} on device {} {} (budget {} MiB)", member->names_.segment,
        member->slot_, member->device_, node.identityOf(member->device_), node.capacityOf(member->device_) >> 20);
  return member;
}

bool NodeMembership::claimRecord(const std::string& name) {
  NodeState& node = this->node();
  RobustLock lock(node.lock);
  ClientRecords::Claim claim;
  claim.pid = joinedAs_;
  claim.role = role_ == Role::Memory ? ClientState::Memory : ClientState::Waiting;
  claim.querySlot = role_ == Role::Memory ? querySlotFromEnvironment(node) : kNoSlot;
  claim.device = device_;
  claim.name = name;
  const auto slot = ClientRecords(node).claim(claim);
  if (!slot) return false;
  slot_ = *slot;
  return true;
}

NodeMembership::~NodeMembership() { leave(); }

bool NodeMembership::checkNode() {
  if (lost()) return false;
  if (const auto damage = segment_->damage()) {
    loseNode(fmt::format("the node's segment {} is damaged ({})", names_.segment, *damage));
    return false;
  }
  return true;
}

void NodeMembership::loseNode(const NodeLockUnusable& error) {
  if (dynamic_cast<const NodeLockHeld*>(&error) != nullptr) {
    loseNode(std::string(error.what()));
    return;
  }
  loseNode(fmt::format("the node's segment {} is damaged ({})", names_.segment, error.what()));
}

void NodeMembership::loseNode(const std::string& why) {
  if (lost_.exchange(true, std::memory_order_acq_rel)) return;
  log(LogLevel::Error, "mqx: {}: leaving the node; this process runs alone", why);
  stopping_ = true; // the serving thread ends at its next pass
  if (replies_ != nullptr) replies_->removeName();
  if (evictions_ != nullptr) evictions_->removeName();
}

void NodeMembership::leave() {
  if (!inJoiningProcess()) return; // a fork() child at exit: nothing here is its own
  if (server_.joinable()) {
    stopping_ = true;
    evictions_->send(Message::of(MessageKind::Wake, getpid(), kNoSlot));
    server_.join();
  }
  if (lost()) {
    slot_ = kNoSlot;
    return; // the segment is not touched again; the queues went with loseNode
  }
  publishActivity(); // the last counters, before they are retired with the record
  retire(Message::of(MessageKind::Wake, getpid(), kNoSlot));
  // mqxd removes the queues of the dead clients it reclaims, not of those
  // that leave: the names go here. libmqx.so never destroys its membership,
  // so the destructors would not (every GPU query left two queues behind,
  // and the node has 256).
  if (replies_ != nullptr) replies_->removeName();
  if (evictions_ != nullptr) evictions_->removeName();
}

void NodeMembership::retire(const Message& notice) {
  if (slot_ == kNoSlot || !inJoiningProcess() || lost()) return;
  try {
    RobustLock lock(node().lock);
    if (const auto held = ClientRecords(node()).leave(slot_, getpid()); held && *held != 0)
      log(LogLevel::Debug, "leaving the node with {} bytes still held; given back", *held);
  } catch (const NodeLockUnusable& error) {
    loseNode(error); // leave() runs from destructors and at exit: it may not throw
  }
  slot_ = kNoSlot;
  sendTo(names_.daemonQueue, notice);
}

bool NodeMembership::daemonAlive() { return processAlive(node().daemonPid); }

void NodeMembership::setEvictor(Evictor evictor) {
  std::lock_guard lock(evictorMutex_);
  evictor_ = std::move(evictor);
}

void NodeMembership::setActivitySource(ActivitySource source) {
  publishActivity(); // what the source being replaced says last
  std::lock_guard lock(activityMutex_);
  activitySource_ = std::move(source);
}

void NodeMembership::publishActivity() {
  if (slot_ == kNoSlot || !inJoiningProcess() || lost()) return;
  std::optional<ClientActivity> activity;
  {
    std::lock_guard lock(activityMutex_);
    if (activitySource_) activity = activitySource_();
  }
  if (!activity) return; // busy before any snapshot: the next pass publishes
  try {
    RobustLock lock(node().lock);
    ClientRecords(node()).publishActivity(slot_, getpid(), *activity);
  } catch (const NodeLockUnusable& error) {
    loseNode(error); // also called from leave(), which may not throw
  }
}

void NodeMembership::serveEvictions() {
  try {
    serveEvictionsUntilStopped();
  } catch (const NodeLockUnusable& error) {
    loseNode(error);
  }
}

void NodeMembership::serveEvictionsUntilStopped() {
  Message message;
  auto lastPublished = Clock::now();
  while (!stopping_) {
    // With the heartbeat, the segment is checked (a client that finds it
    // damaged or shrunk leaves it before touching it).
    if (!checkNode()) return;
    {
      RobustLock lock(node().lock);
      ClientRecords(node()).beat(slot_, getpid());
    }
    // The activity with the heartbeat, at most every 100 ms however many
    // requests arrive.
    if (const auto now = Clock::now(); now - lastPublished >= milliseconds(100)) {
      lastPublished = now;
      publishActivity();
    }
    if (!evictions_->receive(&message, milliseconds(100))) continue;
    if (message.kind != MessageKind::EvictRequest) continue;
    const char* refusal = nullptr;
    {
      RobustLock lock(node().lock);
      refusal = evictRequestRefusal(node(), slot_, message);
    }
    if (refusal != nullptr) {
      if (refusedRequests_++ % 100 == 0)
        log(LogLevel::Warn, "refused an eviction request from pid {} naming slot {}: {} ({} refused so far)",
            message.pid, message.slot, refusal, refusedRequests_);
      // A member that named a region this process no longer holds (its
      // published state was stale) learns at once that nothing was freed;
      // anyone else gets no answer at all.
      if (refusal != kNotAMember) sendTo(names_.replyQueue(message.pid), acknowledgement(message, 0));
      continue;
    }
    std::size_t freed = 0;
    {
      std::lock_guard lock(evictorMutex_);
      if (evictor_) freed = evictor_(message.bytes, message.region);
    }
    if (freed > 0) {
      RobustLock lock(node().lock);
      ++node().evictionRequestsServed;
      node().bytesEvictedForOthers += freed;
    }
    const Message ack = acknowledgement(message, freed);
    log(LogLevel::Debug, "evicted {} of {} bytes for process {}", freed, message.bytes, message.pid);
    if (!sendTo(names_.replyQueue(message.pid), ack))
      log(LogLevel::Debug, "process {} is gone; its eviction acknowledgement is dropped", message.pid);
  }
}

bool NodeMembership::skipStoppedHolder(pid_t pid, std::uint64_t held) {
  const bool stopped = processStopped(pid);
  const auto reported = std::find(stoppedHolders_.begin(), stoppedHolders_.end(), pid);
  if (!stopped) {
    if (reported != stoppedHolders_.end()) stoppedHolders_.erase(reported); // it continued: a new stop is said again
    return false;
  }
  if (reported == stoppedHolders_.end()) {
    stoppedHolders_.push_back(pid);
    log(LogLevel::Warn,
        "mqx: process {} is stopped holding {} MiB of the device's memory, which only it can free: not waiting for "
        "it (kill -CONT {} resumes it)",
        pid, held >> 20, pid);
  }
  return true;
}

void NodeMembership::setBlocked(bool blocked) {
  if (slot_ == kNoSlot || lost()) return; // left the node: nobody waits for this record
  try {
    RobustLock lock(node().lock);
    ClientRecords(node()).setBlockedOnMemory(slot_, getpid(), blocked);
  } catch (const NodeLockUnusable& error) {
    loseNode(error); // requestEviction's guard clears it from a destructor
  }
}

bool NodeMembership::mustYield() {
  if (slot_ == kNoSlot || !inJoiningProcess() || !checkNode()) return false;
  std::vector<pid_t> older;
  {
    RobustLock lock(node().lock);
    const std::uint64_t mine = node().clients[slot_].arrival;
    for (const ClientRecord& record : node().clients)
      if (record.state == ClientState::Memory && record.device == device_ && record.blockedOnMemory != 0 &&
          record.arrival < mine)
        older.push_back(record.pid);
  }
  // A stopped waiter gives way to nobody meanwhile: yielding to it would stall this process too.
  return std::any_of(older.begin(), older.end(), [](pid_t pid) { return processAlive(pid) && !processStopped(pid); });
}

std::optional<std::size_t> NodeMembership::askToEvict(pid_t owner, std::uint64_t region, std::size_t bytes,
                                                      Clock::time_point answerBy) {
  Message request = Message::of(MessageKind::EvictRequest, getpid(), slot_);
  request.sequence = nextSequence_++;
  request.bytes = bytes;
  request.region = region;
  if (!sendTo(names_.evictQueue(owner), request)) return std::nullopt;
  Message reply;
  while (Clock::now() < answerBy) {
    const auto left = std::chrono::duration_cast<milliseconds>(answerBy - Clock::now()) + milliseconds(1);
    if (!replies_->receive(&reply, left)) break;
    // Late answers to earlier requests are dropped here, and so are answers
    // not from the owner; no answer frees more than was asked.
    if (reply.kind == MessageKind::EvictAck && reply.sequence == request.sequence && reply.pid == owner)
      return std::min<std::size_t>(reply.bytes, bytes);
  }
  return std::nullopt;
}

std::size_t NodeMembership::requestEvictionOf(std::uint32_t ownerSlot, std::uint64_t region, std::size_t bytes) {
  if (!inJoiningProcess() || ownerSlot >= kMaxClients || ownerSlot == slot_ || !checkNode()) return 0;
  std::lock_guard serial(requestMutex_);
  pid_t owner = 0;
  {
    RobustLock lock(node().lock);
    const ClientRecord& record = node().clients[ownerSlot];
    if (record.state != ClientState::Memory || record.device != device_) return 0;
    owner = record.pid;
  }
  if (!processAlive(owner)) return 0;
  const auto answerBy = Clock::now() + milliseconds(options_.evictionTimeoutMilliseconds);
  const auto freed = askToEvict(owner, region, bytes, answerBy);
  if (!freed)
    log(LogLevel::Warn,
        "process {} did not answer the eviction of its region {} within {} ms (daemon.eviction_timeout_ms); choosing "
        "another victim",
        owner, region, options_.evictionTimeoutMilliseconds);
  return freed.value_or(0);
}

PeerReclaim NodeMembership::requestEviction(std::size_t bytes) {
  if (!inJoiningProcess() || !checkNode()) return PeerReclaim::NobodyElseHolds;
  std::lock_guard serial(requestMutex_);
  const auto start = Clock::now();
  const auto limit = stallLimit(options_.evictionTimeoutMilliseconds);
  auto nextReport = start + limit;
  const pid_t self = getpid();
  // Others see that this process waits for memory (deadlock avoidance,
  // mustYield); cleared however this ends.
  setBlocked(true);
  struct Unblock {
    NodeMembership* client;
    ~Unblock() { client->setBlocked(false); }
  } unblock{this};
  // Queue or evict, never abort (paper §5-6): while the others hold the
  // memory, they either evict it for us or use it for work that ends (pinned
  // pages of launches in flight, a manager busy with an operation) and is
  // evictable then. So this waits as long as anything on the node
  // progresses; a fixed deadline made queries fail while the others were
  // still running (docs/daemon.md).
  ProgressWatch watch(limit, progress());
  for (;;) {
    // The other memory clients, largest holder first: the most likely to
    // have something unpinned to evict.
    std::vector<std::pair<std::uint64_t, pid_t>> owners;
    if (!checkNode()) return PeerReclaim::NobodyElseHolds;
    {
      RobustLock lock(node().lock);
      // Freed meanwhile (another process released, or the daemon reclaimed
      // a dead one's bytes): retry the budget.
      if (node().usedBytes(device_) + bytes <= node().capacityOf(device_)) return PeerReclaim::Freed;
      for (const ClientRecord& record : node().clients)
        if (record.state == ClientState::Memory && record.device == device_ && record.pid != self &&
            record.budgetHeld > 0)
          owners.emplace_back(record.budgetHeld, record.pid);
    }
    // An older client waits too: this one gives way (the caller releases
    // what it backed for its pending launch and retries after it).
    if (mustYield()) return PeerReclaim::MustYield;
    if (owners.empty()) return PeerReclaim::NobodyElseHolds; // this process holds it all: waiting cannot help
    // A dead owner cannot answer; the daemon gives its bytes back shortly.
    // A stopped one cannot either, until it continues: said once per stop,
    // and not waited for (each launch waited 8 s for it, then ran from host
    // memory).
    std::erase_if(owners, [](const auto& owner) { return !processAlive(owner.second); });
    const std::size_t stopped =
        std::erase_if(owners, [this](const auto& owner) { return skipStoppedHolder(owner.second, owner.first); });
    if (stopped != 0 && owners.empty()) return PeerReclaim::NobodyElseHolds; // only stopped ones hold it
    std::sort(owners.rbegin(), owners.rend());
    for (const auto& [held, owner] : owners) {
      const auto answerBy =
          Clock::now() + std::min(milliseconds(500), milliseconds(options_.evictionTimeoutMilliseconds));
      const auto freed = askToEvict(owner, 0, bytes, answerBy);
      if (freed && *freed > 0) return PeerReclaim::Freed;
    }
    const auto now = Clock::now();
    if (watch.stalled(progress())) {
      log(LogLevel::Warn,
          "no other process freed device memory for {} bytes in {} ms, and nothing on the node progressed for {} ms "
          "(4 x daemon.eviction_timeout_ms): out of memory; {}",
          bytes, std::chrono::duration_cast<milliseconds>(now - start).count(), limit.count(), describeNode());
      return PeerReclaim::NoProgress;
    }
    if (now >= nextReport) {
      nextReport = now + limit;
      log(LogLevel::Info, "waiting {} ms so far for {} bytes of device memory from the other processes; {}",
          std::chrono::duration_cast<milliseconds>(now - start).count(), bytes, describeNode());
    }
    // Everything the others hold is in use right now: let their work finish.
    std::this_thread::sleep_for(milliseconds(2));
  }
}

std::uint64_t NodeMembership::progress() {
  if (lost()) return 0;
  // Mixes every value that another client's progress changes; its own
  // record is left out (its waiting changes nothing for itself).
  std::uint64_t fingerprint = 0;
  auto mix = [&fingerprint](std::uint64_t value) {
    fingerprint ^= value + 0x9e3779b97f4a7c15ull + (fingerprint << 6) + (fingerprint >> 2);
  };
  NodeState& state = node();
  mix(state.logicalClock.load(std::memory_order_relaxed)); // every launch of every process
  RobustLock lock(state.lock);
  mix(state.evictionRequestsServed);
  mix(state.bytesEvictedForOthers);
  mix(state.reclaimedBytes);
  mix(state.deadClients);
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    const ClientRecord& record = state.clients[i];
    // Clients of other devices hold none of this budget; queries (no
    // device until placed) count, their admission is progress.
    if (i == slot_ || record.state == ClientState::Free) continue;
    if (record.state == ClientState::Memory && record.device != device_) continue;
    mix(i);
    mix(static_cast<std::uint64_t>(record.pid));
    mix(static_cast<std::uint64_t>(record.state));
    mix(record.budgetHeld);
    mix(record.activity.launches);
    mix(record.activity.evictions);
    mix(record.activity.bytesToDevice);
    mix(record.activity.bytesToHost);
  }
  return fingerprint;
}

std::string NodeMembership::describeNode() {
  if (lost()) return "the node was lost (damaged, or its lock held past its bound): this process runs alone";
  struct Other {
    std::uint64_t held;
    pid_t pid;
    bool waiting;
    bool older;
    std::string name;
  };
  std::vector<Other> others;
  std::uint64_t capacity = node().capacityOf(device_), used = 0;
  {
    RobustLock lock(node().lock);
    used = node().usedBytes(device_);
    const std::uint64_t mine = slot_ != kNoSlot ? node().clients[slot_].arrival : 0;
    for (std::uint32_t i = 0; i < kMaxClients; ++i) {
      const ClientRecord& record = node().clients[i];
      if (i == slot_ || record.state != ClientState::Memory || record.device != device_) continue;
      if (record.budgetHeld == 0 && record.blockedOnMemory == 0) continue;
      others.push_back({record.budgetHeld, record.pid, record.blockedOnMemory != 0, record.arrival < mine,
                        std::string(record.name, strnlen(record.name, sizeof record.name))});
    }
  }
  std::sort(others.begin(), others.end(), [](const Other& a, const Other& b) { return a.held > b.held; });
  // A node of one device reads as before devices were counted.
  std::string text = node().deviceCount == 1
                         ? fmt::format("node {} of {} MiB used", used >> 20, capacity >> 20)
                         : fmt::format("device {} ({} of the node's {}) {} of {} MiB used", node().identityOf(device_),
                                       device_, node().deviceCount, used >> 20, capacity >> 20);
  constexpr std::size_t kShown = 6;
  for (std::size_t i = 0; i < others.size() && i < kShown; ++i) {
    const Other& other = others[i];
    text +=
        fmt::format("; pid {} ({}) holds {} MiB{}", other.pid, other.name.empty() ? "?" : other.name, other.held >> 20,
                    other.waiting ? (other.older ? ", older, waits for memory" : ", waits for memory") : "");
  }
  if (others.size() > kShown) text += fmt::format("; {} more", others.size() - kShown);
  return text;
}

} // namespace mqx::ipc
