// Contention never aborts a query, and nothing leaves the node stuck
// (issue 13; docs/hardening.md, "Faults and bad inputs tried"): the default
// capacity on a GPU, admission waits that say why and end, SIGHUP, queues of
// clients that died while no mqxd ran, a damaged segment, and a flood of
// invalid messages. Real mqxd, mqx-run and client processes.
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <unistd.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "config/config.hpp"
#include "ipc/messages.hpp"
#include "node_capacity.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// --- 1. Default capacity -----------------------------------------------------

daemon::DeviceProbe deviceOf(std::uint64_t totalBytes, int* calls) {
  return [=] {
    ++*calls;
    return std::vector<daemon::DeviceMemory>{
        daemon::DeviceMemory{totalBytes, 0, "injected", "GPU-00000000-0000-0000-0000-000000000001"}};
  };
}

daemon::DeviceProbe noDevice(int* calls) {
  return [=] {
    ++*calls;
    return std::vector<daemon::DeviceMemory>();
  };
}

// The budget of the node's only device.
std::uint64_t onlyCapacity(const std::vector<daemon::NodeDevice>& devices) {
  EXPECT_EQ(devices.size(), 1u);
  return devices.empty() ? 0 : devices[0].capacity;
}

TEST(NodeCapacity, OnAGpuItIsTheDevicesMemoryLessTheReserve) {
  // Two 45 GB PyTorch jobs under mqx-run failed with "GPU 0 has a total
  // capacity of 1024.00 MiB": the node got sim.capacity on an 80 GB GPU.
  Config config; // daemon.capacity 0, no device memory limit, backend auto
  int calls = 0;
  const std::uint64_t h100 = 80 * kGiB;
  const auto devices = daemon::nodeDevices(config, deviceOf(h100, &calls));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(onlyCapacity(devices), h100 - h100 / 20) << devices[0].origin; // 5% of 80 GiB: 4 GiB
  EXPECT_EQ(devices[0].identity, "GPU-00000000-0000-0000-0000-000000000001");
  config.backend = BackendKind::Cuda;
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, deviceOf(h100, &calls))), 76 * kGiB);
  // A small GPU keeps at least 1.5 GiB.
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, deviceOf(16 * kGiB, &calls))), 16 * kGiB - 3 * kGiB / 2);
  EXPECT_EQ(daemon::deviceReserveBytes(16 * kGiB), 3 * kGiB / 2);
  EXPECT_EQ(daemon::deviceReserveBytes(40 * kGiB), 2 * kGiB);
}

TEST(NodeCapacity, SimulatedDeviceAndExplicitSettings) {
  Config config;
  int calls = 0;
  config.backend = BackendKind::Sim;
  config.simCapacity = 48 << 20;
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, deviceOf(80 * kGiB, &calls))), std::uint64_t{48} << 20);
  EXPECT_EQ(calls, 0) << "the simulated device needs no probe";
  config.backend = BackendKind::Auto; // no GPU: the processes run on the simulated device
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, noDevice(&calls))), std::uint64_t{48} << 20);
  EXPECT_EQ(daemon::nodeDevices(config, noDevice(&calls))[0].identity, "sim-0");
  config.backend = BackendKind::Cuda; // a GPU was asked for and none can be read: say so
  EXPECT_THROW(daemon::nodeDevices(config, noDevice(&calls)), std::runtime_error);
  EXPECT_THROW(daemon::nodeDevices(config, deviceOf(kGiB, &calls)), std::runtime_error) << "below the reserve";
  config.deviceMemoryLimit = 8 * kGiB;
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, noDevice(&calls))), 8 * kGiB);
  config.daemonCapacity = 2 * kGiB;
  EXPECT_EQ(onlyCapacity(daemon::nodeDevices(config, noDevice(&calls))), 2 * kGiB);
}

using Robustness = NodeFixture;

TEST_F(Robustness, MqxdOnTheSimulatedDeviceGetsSimCapacity) {
  environment_["MQX_DAEMON_CAPACITY"] = "0";
  environment_["MQX_BACKEND_KIND"] = "sim";
  environment_["MQX_SIM_CAPACITY"] = "48MiB";
  startDaemon();
  EXPECT_EQ(segment_->state().deviceCount, 1u);
  EXPECT_EQ(segment_->state().capacityOf(0), std::uint64_t{48} << 20);
  EXPECT_EQ(segment_->state().identityOf(0), "sim-0");
}

// --- 2. Waiting for admission ------------------------------------------------

class AdmissionWaits : public NodeFixture {
protected:
  bool running(const std::string& name) {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      if (record.state == ipc::ClientState::Running && name == record.name) return true;
    return false;
  }
  bool waitUntilRunning(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (running(name)) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
};

TEST_F(AdmissionWaits, AWaitingQuerySaysWhyAndForWhomAndAStoppedHolderIsNamed) {
  startDaemon(true);
  // The holder: 24 of the node's 32 MiB, running until the test ends it.
  auto holder = run({"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "sleep 30"});
  ASSERT_TRUE(waitUntilRunning("holder"));
  auto waiting =
      run({"--plan", plan("waiting", 16), "--timeout", "0", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  const auto start = std::chrono::steady_clock::now();
  auto first = waiting->waitForLineContaining("waits for admission", 3s);
  ASSERT_TRUE(first.has_value()) << "a waiting query must say so at once";
  EXPECT_NE(first->find("query 'waiting'"), std::string::npos) << *first;
  EXPECT_NE(first->find("needs 16.0 MiB"), std::string::npos) << *first;
  EXPECT_NE(first->find("8.0 MiB of the node's 32.0 MiB are free"), std::string::npos) << *first;
  EXPECT_NE(first->find("'holder' (pid " + std::to_string(holder->pid()) + ") demand 24.0 MiB"), std::string::npos)
      << *first;
  EXPECT_NE(first->find("no time limit"), std::string::npos) << *first;
  // Every 5 s again; a stopped holder is named so, and mqxd says so once.
  holder->signal(SIGSTOP);
  auto second = waiting->waitForLineContaining("waits for admission", 8s);
  ASSERT_TRUE(second.has_value()) << "a waiting query repeats why it waits";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_NE(second->find("'holder' (pid " + std::to_string(holder->pid()) + ", STOPPED"), std::string::npos) << *second;
  auto reported = daemon_->waitForLineContaining("is stopped holding", 3s);
  ASSERT_TRUE(reported.has_value()) << "mqxd reports a stopped holder";
  EXPECT_NE(reported->find("'holder' (pid " + std::to_string(holder->pid()) + ")"), std::string::npos) << *reported;
  // A query with a time limit gives up with its own exit status and says why.
  auto impatient =
      run({"--plan", plan("impatient", 16), "--timeout", "1", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  EXPECT_EQ(impatient->wait(10s), 75);
  const std::string last = impatient->readRest(2s);
  EXPECT_NE(last.find("not admitted within 1 s"), std::string::npos) << last;
  EXPECT_NE(last.find("STOPPED"), std::string::npos) << last;
  // The holder continues and ends: the patient query is admitted and runs.
  holder->signal(SIGCONT);
  holder->signal(SIGTERM);
  EXPECT_EQ(waiting->wait(15s), 0);
}

// The stopped process is the query's child, not mqx-run: the waiting
// query's line names the child and the command that resumes it (it named
// mqx-run's pid as stopped).
TEST_F(AdmissionWaits, AStoppedProcessOfAHoldingQueryIsNamedItselfNotItsMqxRun) {
  startDaemon();
  auto holder =
      run({"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "hold-budget", std::to_string(20 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  pid_t child = 0;
  {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      if (record.state == ipc::ClientState::Memory && record.querySlot != ipc::kNoSlot) child = record.pid;
  }
  ASSERT_GT(child, 0);
  kill(child, SIGSTOP);
  auto waiting =
      run({"--plan", plan("waiting", 16), "--timeout", "1", "--start-when-admitted", "--", "/bin/true"}, {}, true);
  EXPECT_EQ(waiting->wait(10s), 75);
  const std::string said = waiting->readRest(2s);
  const std::string resume = "kill -CONT " + std::to_string(child);
  EXPECT_NE(said.find("its process " + std::to_string(child) + " is STOPPED: " + resume), std::string::npos) << said;
  EXPECT_EQ(said.find("pid " + std::to_string(holder->pid()) + ", STOPPED"), std::string::npos) << said;
  kill(child, SIGCONT);
  holder->signal(SIGTERM);
  holder->wait(10s);
}

TEST_F(AdmissionWaits, TheTimeLimitComesFromTheConfigurationToo) {
  startDaemon();
  auto holder = run({"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "sleep 30"});
  ASSERT_TRUE(waitUntilRunning("holder"));
  auto waiting = run({"--plan", plan("waiting", 16), "--", SIM_CLIENT_PATH, "gate", "/bin/true"},
                     {{"MQX_DAEMON_ADMISSION_TIMEOUT_S", "1"}});
  EXPECT_EQ(waiting->wait(10s), 75);
  auto bad = run({"--timeout", "soon", "--", SIM_CLIENT_PATH, "gate", "/bin/true"});
  EXPECT_EQ(bad->wait(5s), 2);
  auto badRestartWait = run({"--daemon-restart-wait", "-3", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  EXPECT_EQ(badRestartWait->wait(5s), 2);
  EXPECT_NE(badRestartWait->readRest(2s).find("--daemon-restart-wait wants whole seconds"), std::string::npos);
  holder->signal(SIGTERM);
  EXPECT_TRUE(holder->wait(10s).has_value());
}

// A restart or an upgrade while a query waits for admission (issue 18): the
// waiting mqx-run does not give up when its mqxd stops cleanly; it says so,
// waits for the next mqxd, asks it, and runs. Without one it gives up after
// --daemon-restart-wait with exit 69 and says why.
TEST_F(AdmissionWaits, AWaitingQueryAsksTheNextDaemonAfterARestart) {
  startDaemon();
  auto holder = run({"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "sleep 30"});
  ASSERT_TRUE(waitUntilRunning("holder"));
  auto waiting = run({"--plan", plan("waiting", 16), "--timeout", "0", "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                      "echo waited-and-ran"},
                     {}, true);
  ASSERT_TRUE(waiting->waitForLineContaining("waits for admission", 3s).has_value());
  daemon_->signal(SIGTERM);
  ASSERT_EQ(daemon_->wait(5s), 0);
  daemon_.reset();
  segment_.reset();
  auto gone = waiting->waitForLineContaining("waiting up to 30 s for the next mqxd", 5s);
  ASSERT_TRUE(gone.has_value()) << "the waiting query must say that mqxd went away and what it waits for";
  startDaemon(); // the new one; the old holder runs on alone, outside its budget
  ASSERT_TRUE(
      waiting->waitForLineContaining("asks the new mqxd (pid " + std::to_string(daemon_->pid()), 5s).has_value());
  EXPECT_TRUE(waiting->waitForLine("waited-and-ran", 10s));
  EXPECT_EQ(waiting->wait(10s), 0);
  // No next mqxd: the wait is bounded and says why it ended.
  auto second = run({"--plan", plan("second", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "sleep 30"});
  ASSERT_TRUE(waitUntilRunning("second"));
  auto alone =
      run({"--plan", plan("alone", 16), "--daemon-restart-wait", "1", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {},
          true);
  ASSERT_TRUE(alone->waitForLineContaining("waits for admission", 3s).has_value());
  daemon_->signal(SIGTERM);
  ASSERT_EQ(daemon_->wait(5s), 0);
  daemon_.reset();
  segment_.reset();
  EXPECT_EQ(alone->wait(10s), 69);
  EXPECT_NE(alone->readRest(2s).find("no mqxd came back within the wait"), std::string::npos);
  for (auto* process : {holder.get(), second.get()}) {
    process->signal(SIGTERM);
    EXPECT_TRUE(process->wait(10s).has_value());
  }
}

// --- 3. SIGHUP ------------------------------------------------------------------

TEST_F(Robustness, SighupIsACleanExit) {
  // Closing mqxd's terminal sent SIGHUP, which killed it and left its
  // segment and queue behind.
  startDaemon();
  segment_.reset();
  daemon_->signal(SIGHUP);
  EXPECT_EQ(daemon_->wait(5s), 0);
  daemon_.reset();
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr) << "the segment outlived mqxd";
  EXPECT_EQ(ipc::MessageQueue::openForSending(names().daemonQueue), nullptr) << "the queue outlived mqxd";
}

// --- 4. Queues of clients that died while no mqxd ran ----------------------------

bool queueExists(const std::string& name) { return ipc::MessageQueue::openForSending(name) != nullptr; }

TEST_F(Robustness, QueuesOfClientsThatDiedWhileNoMqxdRanAreRemovedAtStart) {
  for (const bool crash : {false, true}) {
    SCOPED_TRACE(crash ? "mqxd SIGKILLed" : "mqxd stopped with SIGTERM");
    startDaemon();
    auto member = client({"hold-budget", std::to_string(1 << 20), "0"});
    ASSERT_TRUE(member->waitForLine("held", 5s));
    const pid_t pid = member->pid();
    segment_.reset();
    if (crash) {
      daemon_->signal(SIGKILL);
      EXPECT_TRUE(daemon_->wait(5s).has_value());
      daemon_.reset();
    } else {
      stopDaemon();
    }
    member->signal(SIGKILL); // dies while no mqxd runs: nobody removes its queues
    EXPECT_EQ(member->wait(5s), 128 + SIGKILL);
    ASSERT_TRUE(queueExists(names().evictQueue(pid)));
    ASSERT_TRUE(queueExists(names().replyQueue(pid)));
    startDaemon();
    EXPECT_FALSE(queueExists(names().evictQueue(pid))) << "the next mqxd must remove the dead client's queues";
    EXPECT_FALSE(queueExists(names().replyQueue(pid)));
    stopDaemon();
  }
}

// --- 5. A damaged segment, a held lock: SIGTERM always works ---------------------

TEST_F(Robustness, AnOverwrittenSegmentIsRefusedInOneLine) {
  startDaemon(true);
  segment_.reset();
  {
    std::ofstream garbage("/dev/shm/" + names().segment, std::ios::binary | std::ios::in | std::ios::out);
    ASSERT_TRUE(garbage.good());
    std::mt19937_64 random(13);
    for (int i = 0; i < 64 * 1024; ++i) {
      const std::uint64_t word = random();
      garbage.write(reinterpret_cast<const char*>(&word), sizeof word);
    }
  }
  daemon_->signal(SIGTERM);
  const auto status = daemon_->wait(5s);
  ASSERT_TRUE(status.has_value()) << "mqxd ignores SIGTERM on a damaged segment";
  EXPECT_EQ(*status, 1);
  const std::string output = daemon_->readRest(2s);
  daemon_.reset();
  EXPECT_NE(output.find("mqxd: segment " + names().segment + " is damaged"), std::string::npos) << output;
  EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr);
}

TEST_F(Robustness, AGarbageSegmentLeftBehindIsReplacedAtStart) {
  {
    std::ofstream garbage("/dev/shm/" + names().segment, std::ios::binary);
    garbage << std::string(1 << 20, '\x5a');
  }
  std::string damage;
  EXPECT_EQ(ipc::SharedSegment::open(names(), &damage), nullptr);
  EXPECT_NE(damage.find("bad magic"), std::string::npos) << damage;
  auto query = run({"--", SIM_CLIENT_PATH, "gate", "/bin/true"});
  EXPECT_EQ(query->wait(5s), 69) << "mqx-run must not use a damaged segment";
  daemon_ = std::make_unique<ChildProcess>(std::vector<std::string>{MQXD_PATH}, environment_, true);
  auto line = daemon_->waitForLineContaining("damaged segment", 5s);
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("bad magic"), std::string::npos) << *line;
  ASSERT_TRUE(daemon_->waitForLine("mqxd: ready (" + names().segment + ")", 5s));
  segment_ = ipc::SharedSegment::open(names());
  ASSERT_NE(segment_, nullptr);
  EXPECT_EQ(segment_->state().daemonPid, daemon_->pid());
  auto fine = run({"--", SIM_CLIENT_PATH, "gate", "/bin/true"});
  EXPECT_EQ(fine->wait(10s), 0);
}

TEST_F(Robustness, ASegmentOfAnotherVersionIsNotJoinedAndNotTouched) {
  // A node whose mqxd is of another version: a sealed header of the next
  // segment version, its "daemon" alive (this test process).
  {
    namespace bip = boost::interprocess;
    bip::shared_memory_object object(bip::create_only, names().segment.c_str(), bip::read_write,
                                     bip::permissions(0600));
    object.truncate(static_cast<bip::offset_t>(sizeof(ipc::NodeState)));
    bip::mapped_region region(object, bip::read_write, 0, sizeof(ipc::NodeState));
    auto* state = new (region.get_address()) ipc::NodeState();
    state->layoutBytes = sizeof(ipc::NodeState);
    state->version = ipc::kNodeStateVersion + 1;
    state->daemonPid = getpid();
    state->deviceCount = 1;
    state->devices[0].capacity = 12345;
    ipc::sealHeader(*state);
  }
  auto query = run({"--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  auto line = query->waitForLineContaining("another version of mqx", 5s);
  ASSERT_TRUE(line.has_value()) << "mqx-run must say why it does not join";
  EXPECT_NE(line->find("version " + std::to_string(ipc::kNodeStateVersion + 1)), std::string::npos) << *line;
  EXPECT_NE(line->find("this build reads " + std::to_string(ipc::kNodeStateVersion)), std::string::npos) << *line;
  EXPECT_EQ(query->wait(5s), 69) << "no node of this version: mqx-run's no-daemon status";
  // Untouched: the header is as written, and still sealed.
  namespace bip = boost::interprocess;
  bip::shared_memory_object object(bip::open_only, names().segment.c_str(), bip::read_only);
  bip::mapped_region region(object, bip::read_only, 0, sizeof(ipc::NodeState));
  const auto* state = static_cast<const ipc::NodeState*>(region.get_address());
  EXPECT_EQ(state->version, ipc::kNodeStateVersion + 1);
  EXPECT_EQ(state->devices[0].capacity, 12345U);
  EXPECT_EQ(state->headerChecksum, ipc::headerChecksumOf(*state));
  for (const auto& record : state->clients)
    EXPECT_EQ(record.state, ipc::ClientState::Free);
  bip::shared_memory_object::remove(names().segment.c_str());
}

TEST_F(Robustness, ASmallerSegmentOfAnOlderVersionIsNotJoined) {
  // An older mqx's node state, smaller than this build's: only its header's
  // first fields are ours to read.
  namespace bip = boost::interprocess;
  const std::size_t bytes = sizeof(ipc::NodeState) / 2;
  {
    bip::shared_memory_object object(bip::create_only, names().segment.c_str(), bip::read_write,
                                     bip::permissions(0600));
    object.truncate(static_cast<bip::offset_t>(bytes));
    bip::mapped_region region(object, bip::read_write, 0, bytes);
    auto* header = static_cast<std::uint32_t*>(region.get_address());
    header[0] = ipc::kNodeStateMagic;
    header[1] = ipc::kNodeStateVersion - 1;
    *reinterpret_cast<std::uint64_t*>(header + 2) = bytes;
  }
  auto query = run({"--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  auto line = query->waitForLineContaining("another version of mqx", 5s);
  ASSERT_TRUE(line.has_value()) << "mqx-run must say why it does not join";
  EXPECT_EQ(query->wait(5s), 69);
  bip::shared_memory_object object(bip::open_only, names().segment.c_str(), bip::read_only);
  bip::offset_t size = 0;
  ASSERT_TRUE(object.get_size(size));
  EXPECT_EQ(static_cast<std::size_t>(size), bytes) << "the segment must stay as it was";
  bip::shared_memory_object::remove(names().segment.c_str());
}

TEST_F(Robustness, SigtermStopsMqxdWhileAStoppedClientHoldsTheNodeLock) {
  startDaemon();
  auto locker = client({"hold-lock", std::to_string(1 << 20)});
  ASSERT_TRUE(locker->waitForLine("locked", 5s));
  locker->signal(SIGSTOP);
  std::this_thread::sleep_for(300ms); // mqxd's next pass waits for the lock
  segment_.reset();
  daemon_->signal(SIGTERM);
  EXPECT_EQ(daemon_->wait(5s), 0) << "mqxd must stop while a stopped process holds the node lock";
  daemon_.reset();
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr);
  locker->signal(SIGKILL);
  EXPECT_EQ(locker->wait(5s), 128 + SIGKILL);
  // mqxd is gone, so nobody removes the killed client's queues: each run
  // left two behind, and a machine that ran the tests often ran out of the
  // system's 256 (ssb_soak failed with "No space left on device").
  for (const std::string& queue : {names().evictQueue(locker->pid()), names().replyQueue(locker->pid())})
    EXPECT_EQ(mq_unlink(queue.c_str()), 0) << queue;
}

// --- 6. Invalid messages: at most one log line a second --------------------------

// Sends `count` messages of garbage (the right size, a wrong magic) to
// `queue`; the seconds it took.
double flood(const std::string& queue, int count) {
  const mqd_t target = mq_open(queue.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  EXPECT_NE(target, static_cast<mqd_t>(-1)) << queue;
  std::string garbage(sizeof(ipc::Message), '\x17');
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + 10s; // a receiver that stopped draining fails the test, not hangs it
  for (int sent = 0; sent < count && std::chrono::steady_clock::now() < deadline;) {
    if (mq_send(target, garbage.data(), garbage.size(), 0) == 0)
      ++sent;
    else
      std::this_thread::sleep_for(1ms); // full: the receiver drains it
  }
  mq_close(target);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::size_t linesContaining(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    count += line.find(what) != std::string::npos ? 1 : 0;
  return count;
}

TEST_F(Robustness, AFloodOfInvalidMessagesIsLoggedAtMostOnceASecond) {
  startDaemon(true);
  auto member = client({"hold-budget", std::to_string(1 << 20), "0"}, {}, true);
  ASSERT_TRUE(member->waitForLine("held", 5s));
  const double daemonSeconds = flood(names().daemonQueue, 3000);
  const double memberSeconds = flood(names().evictQueue(member->pid()), 3000);
  std::this_thread::sleep_for(1200ms);
  // One more after a second: its line counts the ones not logged.
  flood(names().daemonQueue, 1);
  flood(names().evictQueue(member->pid()), 1);
  const std::string daemonLog = daemon_->readRest(1500ms);
  const std::string memberLog = member->readRest(1500ms);
  const auto daemonLines = linesContaining(daemonLog, "dropping an invalid message");
  const auto memberLines = linesContaining(memberLog, "dropping an invalid message");
  EXPECT_GE(daemonLines, 2u) << daemonLog;
  EXPECT_LE(daemonLines, static_cast<std::size_t>(daemonSeconds) + 4) << daemonLog;
  EXPECT_GE(memberLines, 2u) << memberLog;
  EXPECT_LE(memberLines, static_cast<std::size_t>(memberSeconds) + 4) << memberLog;
  EXPECT_NE(daemonLog.find("more dropped since the last line"), std::string::npos) << daemonLog;
  EXPECT_NE(memberLog.find("more dropped since the last line"), std::string::npos) << memberLog;
  member->signal(SIGKILL);
}

} // namespace
} // namespace mqx::test
