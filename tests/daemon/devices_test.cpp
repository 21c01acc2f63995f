// A node of several devices (issue 16; docs/daemon.md, "Several GPUs") on the
// simulated device: mqxd with sim.devices = 2 lists sim-0 and sim-1, each
// with its own budget; memory clients draw on one device each, and eviction
// requests never cross devices; queries are placed by weighted demand or
// round-robin, or where mqx-run --device asks, and run with their device
// exported. Real mqxd, mqx-run and client processes.
#include <fstream>

#include "ipc/messages.hpp"
#include "ipc/node_membership.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

class Devices : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    environment_["MQX_BACKEND_KIND"] = "sim"; // the simulated devices, also on a GPU host
    environment_["MQX_SIM_DEVICES"] = "2";
    environment_.erase("CUDA_VISIBLE_DEVICES");
  }
  std::map<std::string, std::string> on(const std::string& device) { return {{"MQX_SIM_DEVICE", device}}; }
  std::uint64_t usedOn(std::uint32_t device) {
    ipc::RobustLock lock(segment_->state().lock);
    return segment_->state().usedBytes(device);
  }
  bool waitUntilBudgetFreeOn(std::uint32_t device, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (usedOn(device) == 0) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  // A query of weighted demand `mib` that prints the simulated device it was
  // given and runs until the test ends it.
  std::unique_ptr<ChildProcess> query(const std::string& name, std::uint64_t mib,
                                      const std::vector<std::string>& options = {}) {
    std::vector<std::string> args{"--plan", plan(name, mib)};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(),
                {"--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "echo device=$MQX_SIM_DEVICE; exec sleep 30"});
    return run(args);
  }
  // The device index of the running query `name`, once mqxd admitted it.
  std::optional<std::uint32_t> runningOn(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        ipc::RobustLock lock(segment_->state().lock);
        for (const auto& record : segment_->state().clients)
          if (record.state == ipc::ClientState::Running && name == record.name) return record.device;
      }
      std::this_thread::sleep_for(2ms);
    }
    return std::nullopt;
  }
  // The state of `name` once it has a record and asked for admission (and
  // mqxd had a few passes to admit it).
  std::optional<ipc::ClientState> stateAfterArrival(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      bool asked = false;
      {
        ipc::RobustLock lock(segment_->state().lock);
        for (const auto& record : segment_->state().clients)
          if (record.state != ipc::ClientState::Free && name == record.name && record.admissionRequested != 0)
            asked = true;
      }
      if (asked) break;
      std::this_thread::sleep_for(2ms);
    }
    std::this_thread::sleep_for(300ms); // several liveness intervals of mqxd's admission passes
    return stateOf(name);
  }
  // Starts `name` and expects it to run on `device`, told so by mqx-run.
  std::unique_ptr<ChildProcess> expectPlaced(const std::string& name, std::uint64_t mib, std::uint32_t device,
                                             const std::vector<std::string>& options = {}) {
    auto process = query(name, mib, options);
    EXPECT_EQ(runningOn(name), std::optional<std::uint32_t>(device)) << name;
    EXPECT_TRUE(process->waitForLine("device=sim-" + std::to_string(device), 10s)) << name << ": MQX_SIM_DEVICE";
    return process;
  }
  // Ends queries started by query(): mqx-run forwards SIGTERM to its query
  // and ends with it (a query left running would hold the test's output).
  void stop(std::initializer_list<ChildProcess*> queries) {
    for (auto* process : queries)
      process->signal(SIGTERM);
    for (auto* process : queries)
      EXPECT_EQ(process->wait(10s), 128 + SIGTERM);
  }
};

TEST_F(Devices, TheNodeListsEachDeviceAndEachClientHasItsOwnFullBudget) {
  environment_["MQX_LOG_LEVEL"] = "info";
  daemon_ = std::make_unique<ChildProcess>(std::vector<std::string>{MQXD_PATH}, environment_, true);
  const auto ready = daemon_->waitForLineContaining("ready: budget", 5s);
  ASSERT_TRUE(ready.has_value()) << "mqxd's start line";
  EXPECT_NE(ready->find("budget 64 MiB"), std::string::npos) << *ready;
  EXPECT_NE(ready->find("2 devices: sim-0 32 MiB, sim-1 32 MiB, placement demand"), std::string::npos) << *ready;
  ASSERT_TRUE(daemon_->waitForLine("mqxd: ready (" + names().segment + ")", 5s));
  segment_ = ipc::SharedSegment::open(names());
  ASSERT_NE(segment_, nullptr);
  const ipc::NodeState& node = segment_->state();
  ASSERT_EQ(node.deviceCount, 2u);
  EXPECT_EQ(node.identityOf(0), "sim-0");
  EXPECT_EQ(node.identityOf(1), "sim-1");
  EXPECT_EQ(node.capacityOf(0), 32 * kMiB) << "daemon.capacity is each device's";
  EXPECT_EQ(node.capacityOf(1), 32 * kMiB);

  // Each takes its whole device: neither budget is the other's.
  auto first = client({"hold-budget", std::to_string(32 * kMiB), "0"}, on("sim-0"));
  auto second = client({"hold-budget", std::to_string(32 * kMiB), "0"}, on("sim-1"));
  ASSERT_TRUE(first->waitForLine("held", 10s));
  ASSERT_TRUE(second->waitForLine("held", 10s));
  EXPECT_EQ(usedOn(0), 32 * kMiB);
  EXPECT_EQ(usedOn(1), 32 * kMiB);
  // sim-0 is full: a third client there gets nothing, whatever the node has.
  auto third = client({"hold-budget", std::to_string(kMiB), "0"}, on("0"));
  EXPECT_EQ(third->wait(10s), 4) << "sim-0's budget was exceeded";
  first->signal(SIGKILL);
  EXPECT_EQ(first->wait(5s), 128 + SIGKILL);
  ASSERT_TRUE(waitUntilBudgetFreeOn(0, 1000ms)) << "mqxd reclaims the dead client's bytes on sim-0";
  EXPECT_EQ(usedOn(1), 32 * kMiB) << "sim-1 untouched";
  second->signal(SIGKILL);
  second->wait(5s);
}

TEST_F(Devices, ADeviceTheNodeLacksIsRefusedNamingItAndTheNodesDevices) {
  startDaemon();
  for (const std::string device : {"sim-2", "2", "GPU-00000000-0000-0000-0000-000000000000"}) {
    try {
      ipc::NodeMembership::connect(ipc::NodeOptions{instance_, 2000, device}, ipc::NodeMembership::Role::Memory);
      ADD_FAILURE() << device << " was accepted";
    } catch (const ipc::UnknownDevice& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("'" + device + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("its devices: 0 sim-0 (32 MiB), 1 sim-1 (32 MiB)"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
    }
  }
  // Names, indices and "" are the node's.
  EXPECT_EQ(ipc::NodeMembership::connect(ipc::NodeOptions{instance_, 2000, "sim-1"}, ipc::NodeMembership::Role::Memory)
                ->device(),
            1u);
  EXPECT_EQ(
      ipc::NodeMembership::connect(ipc::NodeOptions{instance_, 2000, "1"}, ipc::NodeMembership::Role::Memory)->device(),
      1u);
  EXPECT_EQ(ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Memory)->device(), 0u);
  EXPECT_EQ(ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Query)->device(),
            ipc::kAnyDevice)
      << "a query is placed by mqxd";
  // A process on the simulated device whose sim.device the node lacks.
  auto lost = client({"hold-budget", std::to_string(kMiB), "0"}, on("sim-7"), true);
  EXPECT_TRUE(lost->waitForLineContaining("no device 'sim-7'", 10s).has_value());
  EXPECT_EQ(lost->wait(10s), 5);
  // mqx-run: exit 2 with one line, for a device the node lacks and for one
  // that is no device at all.
  auto unknown = run({"--device", "sim-3", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  const auto said = unknown->waitForLineContaining("--device", 10s);
  ASSERT_TRUE(said.has_value());
  EXPECT_NE(said->find("no device 'sim-3'"), std::string::npos) << *said;
  EXPECT_EQ(unknown->wait(10s), 2);
  auto malformed = run({"--device", "two words", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  const auto usage = malformed->waitForLineContaining("--device", 10s);
  ASSERT_TRUE(usage.has_value());
  EXPECT_NE(usage->find("'two words'"), std::string::npos) << *usage;
  EXPECT_EQ(malformed->wait(10s), 2);
  EXPECT_EQ(usedOn(0) + usedOn(1), 0u);
}

// Cross-process eviction stays on its device (paper §6 per device): on each
// device a process holds a cold region; a third process overflows one
// device. The cold process of that device evicts for it; the one on the
// other device never does, and keeps its bytes.
class DeviceEviction : public Devices, public ::testing::WithParamInterface<std::uint32_t> {};

TEST_P(DeviceEviction, OnlyProcessesOfTheOverflowingDeviceEvict) {
  const std::uint32_t crowded = GetParam(), other = 1 - GetParam();
  environment_["MQX_DAEMON_CAPACITY"] = "24MiB";
  startDaemon();
  const std::string crowdedName = "sim-" + std::to_string(crowded), otherName = "sim-" + std::to_string(other);
  // The bystander first: its region is the older, the one a victim
  // selection blind to devices would take.
  auto bystander = client({"cold", std::to_string(8 * kMiB), "3000", "8"}, on(otherName));
  ASSERT_TRUE(bystander->waitForLine("ready", 10s));
  auto victim = client({"cold", std::to_string(8 * kMiB), "3000", "7"}, on(crowdedName));
  ASSERT_TRUE(victim->waitForLine("ready", 10s));
  EXPECT_EQ(usedOn(other), 8 * kMiB);
  // 3 x 6 MiB with the victim's 8 MiB: 26 MiB of the crowded device's 24.
  auto crowding = client({"work", "3", std::to_string(6 * kMiB), "3", "9"}, on(crowdedName));
  EXPECT_TRUE(crowding->waitForLine("ok", 20s));
  EXPECT_EQ(crowding->wait(20s), 0);
  EXPECT_EQ(usedOn(other), 8 * kMiB) << "nothing was taken from the other device";
  EXPECT_TRUE(victim->waitForLine("ok", 20s)) << "the victim's data survives";
  EXPECT_TRUE(victim->waitForLine("evictions 1", 1s)) << "the cold process of the crowded device evicted";
  EXPECT_TRUE(bystander->waitForLine("ok", 20s));
  EXPECT_TRUE(bystander->waitForLine("evictions 0", 1s)) << "a process of the other device was asked to evict";
  EXPECT_EQ(victim->wait(20s), 0);
  EXPECT_EQ(bystander->wait(20s), 0);
  EXPECT_EQ(segment_->state().evictionRequestsServed, 1u);
}

INSTANTIATE_TEST_SUITE_P(CrowdedDevice, DeviceEviction, ::testing::Values(0u, 1u));

TEST_F(Devices, AnEvictionRequestFromAnotherDeviceIsAnsweredWithNothing) {
  startDaemon();
  auto holder = client({"cold", std::to_string(8 * kMiB), "1500", "7"}, on("sim-0"));
  ASSERT_TRUE(holder->waitForLine("ready", 10s));
  // A member of sim-1 asks the holder on sim-0 directly (a client that
  // skipped its own device check): the holder answers that it freed nothing.
  auto asker = ipc::NodeMembership::connect(ipc::NodeOptions{instance_, 2000, "sim-1"},
                                            ipc::NodeMembership::Role::Memory, "asker");
  ASSERT_NE(asker, nullptr);
  ipc::Message request = ipc::Message::of(ipc::MessageKind::EvictRequest, getpid(), asker->slot());
  request.sequence = 41;
  request.bytes = 4 * kMiB;
  ASSERT_TRUE(ipc::sendTo(names().evictQueue(holder->pid()), request));
  ipc::Message reply;
  bool answered = false;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!answered && std::chrono::steady_clock::now() < deadline)
    if (asker->replies().receive(&reply, 100ms) && reply.kind == ipc::MessageKind::EvictAck && reply.sequence == 41)
      answered = true;
  ASSERT_TRUE(answered) << "the holder answers a member of the node";
  EXPECT_EQ(reply.bytes, 0u);
  EXPECT_EQ(usedOn(0), 8 * kMiB);
  EXPECT_TRUE(holder->waitForLine("evictions 0", 20s)) << "the holder evicted for another device";
  EXPECT_EQ(holder->wait(20s), 0);
}

TEST_F(Devices, TheLargestHoldersAskedForMemoryAreOfTheSameDevice) {
  // NodeMembership::requestEviction's fallback asks the largest holders of
  // budget: only those of its own device. Here the only holder is on sim-1:
  // a member of sim-0 that needs more than sim-0 has (64 MiB of 32) is told
  // at once that nobody else holds its device's memory, and nobody was
  // asked (asked, the holder refuses, and the asker waits for the node).
  startDaemon();
  auto holder = client({"cold", std::to_string(8 * kMiB), "3000", "7"}, on("sim-1")); // holds 3 s
  ASSERT_TRUE(holder->waitForLine("ready", 10s));
  ASSERT_EQ(usedOn(1), 8 * kMiB);
  auto asker = ipc::NodeMembership::connect(ipc::NodeOptions{instance_, 2000, "sim-0"},
                                            ipc::NodeMembership::Role::Memory, "asker");
  ASSERT_NE(asker, nullptr);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(asker->requestEviction(64 * kMiB), PeerReclaim::NobodyElseHolds);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "waited for a holder of another device";
  EXPECT_EQ(segment_->state().evictionRequestsServed, 0u);
  EXPECT_EQ(usedOn(1), 8 * kMiB);
  EXPECT_TRUE(holder->waitForLine("evictions 0", 20s)) << "the holder on sim-1 was asked to evict";
  EXPECT_EQ(holder->wait(20s), 0);
}

TEST_F(Devices, DemandPlacesABigQueryOnTheEmptierDevice) {
  startDaemon();
  // 8 MiB asked on sim-0; then 16 MiB: sim-0 would keep 8 MiB, sim-1 16 MiB;
  // then 4 MiB: sim-0 keeps 20 MiB, sim-1 12 MiB.
  auto small = expectPlaced("small", 8, 0, {"--device", "sim-0"});
  auto big = expectPlaced("big", 16, 1);
  auto little = expectPlaced("little", 4, 0);
  stop({small.get(), big.get(), little.get()});
}

TEST_F(Devices, EqualRoomGoesToTheLowestIndex) {
  startDaemon();
  auto first = expectPlaced("first", 10, 0);
  auto second = expectPlaced("second", 10, 1);
  auto third = expectPlaced("third", 10, 0); // 12 MiB left on either: the lowest index
  stop({first.get(), second.get(), third.get()});
}

TEST_F(Devices, RoundRobinAlternatesBlindToDemand) {
  environment_["MQX_DAEMON_PLACEMENT"] = "round-robin";
  startDaemon();
  std::vector<std::unique_ptr<ChildProcess>> queries;
  queries.push_back(expectPlaced("q0", 12, 0));
  queries.push_back(expectPlaced("q1", 1, 1));
  queries.push_back(expectPlaced("q2", 12, 0)); // demand would have chosen sim-1
  queries.push_back(expectPlaced("pinned", 1, 0, {"--device", "sim-0"}));
  queries.push_back(expectPlaced("q3", 1, 1)); // a pinned query takes no turn
  for (auto& process : queries)
    stop({process.get()});
}

TEST_F(Devices, DeviceIsHonouredAndAdmissionIsPerDevice) {
  startDaemon();
  // Both empty: demand would choose sim-0; --device 1 (an index) is sim-1.
  auto asked = expectPlaced("asked", 24, 1, {"--device", "1"});
  // sim-1 is full for another 24 MiB asked there: it waits, and a later
  // query that may run anywhere does not wait behind it (sim-0 is free).
  auto waits = query("waits", 24, {"--device", "sim-1"});
  EXPECT_EQ(stateAfterArrival("waits"), std::optional(ipc::ClientState::Waiting));
  auto later = expectPlaced("later", 24, 0);
  // ... but one for sim-1 waits behind the earlier one, however small.
  auto behind = query("behind", 1, {"--device", "sim-1"});
  EXPECT_EQ(stateAfterArrival("behind"), std::optional(ipc::ClientState::Waiting)) << "arrival order holds on a device";
  stop({asked.get()});
  EXPECT_EQ(runningOn("waits"), std::optional<std::uint32_t>(1));
  EXPECT_EQ(runningOn("behind"), std::optional<std::uint32_t>(1));
  EXPECT_TRUE(waits->waitForLine("device=sim-1", 10s));
  stop({waits.get(), later.get(), behind.get()});
}

// A query started before its admission (the default) is placed when it
// arrives, not when it is admitted: its program is shown the one device it
// will run on from its first instruction, before its first CUDA call (a
// program may count devices then: PyTorch asks NVML), and it is admitted on
// that device. Here it waits on sim-1, which has more room after the
// holders, and stays there.
TEST_F(Devices, AQueryStartedBeforeAdmissionIsShownItsDeviceFromItsFirstInstruction) {
  startDaemon();
  auto onZero = expectPlaced("on-zero", 24, 0, {"--device", "sim-0"});
  auto onOne = expectPlaced("on-one", 20, 1, {"--device", "sim-1"});
  auto early = run({"--plan", plan("early", 16), "--", "/bin/sh", "-c",
                    std::string("echo start device=$MQX_SIM_DEVICE; exec ") + SIM_CLIENT_PATH +
                        " gate /bin/sh -c 'echo admitted device=$MQX_SIM_DEVICE; exec sleep 30'"});
  EXPECT_TRUE(early->waitForLine("start device=sim-1", 10s)) << "the program starts on its device, not admitted yet";
  EXPECT_EQ(stateOf("early"), std::optional(ipc::ClientState::Waiting));
  stop({onZero.get()}); // room on sim-0 now: the query still waits for its own device
  EXPECT_EQ(stateAfterArrival("early"), std::optional(ipc::ClientState::Waiting));
  stop({onOne.get()});
  EXPECT_EQ(runningOn("early"), std::optional<std::uint32_t>(1));
  EXPECT_TRUE(early->waitForLine("admitted device=sim-1", 10s));
  stop({early.get()});
}

// A GPU host (a stand-in NVML of three GPUs, tests/daemon/fake_nvml.c):
// mqxd lists the GPUs CUDA_VISIBLE_DEVICES shows, in its order, by UUID;
// each query runs with CUDA_VISIBLE_DEVICES=<its GPU's UUID>, replacing the
// one mqx-run was given, and no MQX_SIM_DEVICE.
TEST_F(Devices, OnAGpuHostEachVisibleGpuIsADeviceAndAQueryIsGivenItsUuid) {
  environment_.erase("MQX_BACKEND_KIND");
  environment_.erase("MQX_SIM_DEVICES");
  environment_["LD_LIBRARY_PATH"] = FAKE_NVML_DIR;
  environment_["MQX_LOG_LEVEL"] = "info";
  const std::string gpu0 = "GPU-00000000-0000-4000-8000-000000000000";
  const std::string gpu2 = "GPU-00000000-0000-4000-8000-000000000002";
  environment_["CUDA_VISIBLE_DEVICES"] = gpu2 + ",0";
  daemon_ = std::make_unique<ChildProcess>(std::vector<std::string>{MQXD_PATH}, environment_, true);
  const auto ready = daemon_->waitForLineContaining("ready: budget", 5s);
  ASSERT_TRUE(ready.has_value()) << "mqxd's start line";
  EXPECT_NE(ready->find("2 devices: " + gpu2 + " 32 MiB, " + gpu0 + " 32 MiB"), std::string::npos) << *ready;
  ASSERT_TRUE(daemon_->waitForLine("mqxd: ready (" + names().segment + ")", 5s));
  segment_ = ipc::SharedSegment::open(names());
  ASSERT_NE(segment_, nullptr);
  ASSERT_EQ(segment_->state().deviceCount, 2u);
  EXPECT_EQ(segment_->state().identityOf(0), gpu2);
  EXPECT_EQ(segment_->state().identityOf(1), gpu0);
  auto told = [&](const std::string& name, std::uint64_t mib, const std::vector<std::string>& options = {}) {
    std::vector<std::string> args{"--plan", plan(name, mib)};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                             "echo gpu=$CUDA_VISIBLE_DEVICES sim=$MQX_SIM_DEVICE; exec sleep 30"});
    return run(args);
  };
  auto first = told("first", 16);
  EXPECT_TRUE(first->waitForLine("gpu=" + gpu2 + " sim=", 10s));
  auto second = told("second", 16);
  EXPECT_TRUE(second->waitForLine("gpu=" + gpu0 + " sim=", 10s)) << "placed by demand on the emptier GPU";
  auto asked = told("asked", 1, {"--device", gpu0});
  EXPECT_TRUE(asked->waitForLine("gpu=" + gpu0 + " sim=", 10s));
  stop({first.get(), second.get(), asked.get()});
  // A GPU that CUDA_VISIBLE_DEVICES hides is no device of the node.
  auto hidden = run(
      {"--device", "GPU-00000000-0000-4000-8000-000000000001", "--", SIM_CLIENT_PATH, "gate", "/bin/true"}, {}, true);
  EXPECT_TRUE(hidden->waitForLineContaining("no device 'GPU-00000000-0000-4000-8000-000000000001'", 10s));
  EXPECT_EQ(hidden->wait(10s), 2);
}

TEST_F(Devices, ASimDeviceJoinsTheNodeDeviceSimDeviceNames) {
  startDaemon();
  std::vector<std::string> argv{SIM_DEVICE_CLIENT_PATH, "two-regions", std::to_string(2 * kMiB)};
  auto environment = environment_;
  environment["MQX_SIM_DEVICE"] = "sim-1";
  ChildProcess device(argv, environment);
  ASSERT_TRUE(device.waitForLine("ready", 10s));
  EXPECT_EQ(usedOn(1), 4 * kMiB);
  EXPECT_EQ(usedOn(0), 0u);
  device.signal(SIGTERM);
  EXPECT_EQ(device.wait(10s), 0);
}

} // namespace
} // namespace mqx::test
