// A query started before its admission (daemon.start_before_admission, the
// default; docs/daemon.md, "Starting before admission"): mqx-run runs the
// program at once, and its first CUDA call (libmqx.so's cuInit over the fake
// driver of tests/gpu/cpu) waits until mqxd admits the query. A query that
// is not admitted in time is stopped before the driver ever starts; a
// program that ends before admission ends the wait.
#include <fstream>

#include "node_fixture.hpp"

namespace mqx::test {
namespace {

class StartBeforeAdmission : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
#if !defined(LIBMQX_PATH) || !defined(CUINIT_PROBE_PATH)
    GTEST_SKIP() << "needs libmqx.so and the fake driver (a build with the CUDA toolkit)";
#else
    environment_["MQX_LIBRARY"] = LIBMQX_PATH;
    environment_["LD_LIBRARY_PATH"] = FAKE_DRIVER_DIR;
#endif
  }
  bool waitForState(const std::string& name, ipc::ClientState state) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (stateOf(name) == state) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
  // 24 of the node's 32 MiB, running (its program past the gate) until the
  // test ends it: a query of 16 MiB waits for it.
  std::unique_ptr<ChildProcess> holder() {
    auto process = run(
        {"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "echo holding; exec sleep 30"});
    EXPECT_TRUE(process->waitForLine("holding", 10s)) << "the holder runs";
    return process;
  }
  void end(ChildProcess& process) {
    process.signal(SIGTERM);
    EXPECT_EQ(process.wait(10s), 128 + SIGTERM);
  }
  // The probe's line (cuInit's `result`, the driver's cuInit calls): the
  // program is shown the node's one device from its start, as mqxd placed
  // it on arrival. A GPU host's mqxd finds its GPU (CUDA_VISIBLE_DEVICES
  // becomes the GPU's UUID); elsewhere the node has the simulated device
  // sim-0 (MQX_SIM_DEVICE; the fixture's CUDA_VISIBLE_DEVICES unchanged).
  std::string probeLine(int result, int driverInits) {
    std::string identity;
    {
      ipc::RobustLock lock(segment_->state().lock);
      identity = segment_->state().identityOf(0);
    }
    const bool gpu = identity.starts_with("GPU-");
    return "cuInit " + std::to_string(result) + " gpu=" + (gpu ? identity : std::string("0")) +
           " sim=" + (gpu ? std::string() : identity) + " driver-inits " + std::to_string(driverInits);
  }
#ifdef CUINIT_PROBE_PATH
  std::unique_ptr<ChildProcess> probe(const std::vector<std::string>& options,
                                      const std::map<std::string, std::string>& extra = {}) {
    std::vector<std::string> args{"--plan", plan("probe", 16)};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", CUINIT_PROBE_PATH});
    return run(args, extra, true);
  }
#endif
};

#ifdef CUINIT_PROBE_PATH

TEST_F(StartBeforeAdmission, TheProgramStartsAtOnceAndItsFirstCudaCallWaitsForAdmission) {
  startDaemon();
  auto held = holder();
  auto query = probe({"--timeout", "0"});
  ASSERT_TRUE(query->waitForLine("started", 5s)) << "the program starts before its admission";
  EXPECT_EQ(stateOf("probe"), ipc::ClientState::Waiting);
  EXPECT_FALSE(query->waitForLineContaining("cuInit", 700ms).has_value())
      << "cuInit returned before the query was admitted";
  end(*held);
  const auto initialised = query->waitForLineContaining("cuInit", 10s);
  ASSERT_TRUE(initialised.has_value()) << "cuInit continues once the query is admitted";
  // Admitted on the node's one device, which the driver is shown before it
  // starts; the driver started once, after the gate.
  EXPECT_EQ(*initialised, probeLine(0, 1));
  EXPECT_EQ(query->wait(10s), 0);
}

TEST_F(StartBeforeAdmission, StartWhenAdmittedStartsTheProgramOnlyOnceAdmitted) {
  startDaemon();
  for (const bool byConfiguration : {false, true}) {
    SCOPED_TRACE(byConfiguration ? "daemon.start_before_admission = false" : "--start-when-admitted");
    auto held = holder();
    auto query = byConfiguration ? probe({}, {{"MQX_DAEMON_START_BEFORE_ADMISSION", "false"}})
                                 : probe({"--start-when-admitted"}, {{"MQX_DAEMON_START_BEFORE_ADMISSION", "true"}});
    ASSERT_TRUE(waitForState("probe", ipc::ClientState::Waiting));
    EXPECT_FALSE(query->waitForLine("started", 700ms)) << "started before its admission";
    end(*held);
    EXPECT_TRUE(query->waitForLine("started", 10s));
    const auto initialised = query->waitForLineContaining("cuInit", 10s);
    ASSERT_TRUE(initialised.has_value());
    EXPECT_EQ(*initialised, probeLine(0, 1));
    EXPECT_EQ(query->wait(10s), 0);
  }
}

TEST_F(StartBeforeAdmission, AQueryNotAdmittedInTimeIsStoppedBeforeTheDriverStarts) {
  startDaemon();
  auto held = holder();
  // A program that ignores SIGTERM (exec keeps the disposition): the record
  // goes first, so its gate refuses and the driver never starts.
  auto stubborn = run({"--plan", plan("stubborn", 16), "--timeout", "1", "--", "/bin/sh", "-c",
                       std::string("trap '' TERM; exec ") + CUINIT_PROBE_PATH},
                      {}, true);
  ASSERT_TRUE(stubborn->waitForLine("started", 5s));
  EXPECT_EQ(stubborn->wait(10s), 75);
  const std::string rest = stubborn->readRest(2s);
  // CUDA_ERROR_NOT_PERMITTED, the driver never started.
  EXPECT_NE(rest.find(probeLine(800, 0)), std::string::npos) << rest;
  EXPECT_NE(rest.find("not admitted within 1 s"), std::string::npos) << rest;
  EXPECT_NE(rest.find("stopping it (it has not used a device)"), std::string::npos) << rest;
  EXPECT_EQ(stateOf("stubborn"), std::nullopt) << "its record is gone";
  // One that SIGTERM ends is ended by it.
  auto query = probe({"--timeout", "1"});
  ASSERT_TRUE(query->waitForLine("started", 5s));
  EXPECT_EQ(query->wait(10s), 75);
  EXPECT_EQ(query->readRest(2s).find("cuInit 0"), std::string::npos);
  end(*held);
}

#endif

TEST_F(StartBeforeAdmission, AProgramThatEndsBeforeItsAdmissionEndsTheWait) {
  startDaemon();
  auto held = holder();
  const auto start = std::chrono::steady_clock::now();
  auto query = run({"--plan", plan("early", 16), "--timeout", "0", "--", "/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(query->wait(10s), 7);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "the wait ends with the program";
  EXPECT_EQ(stateOf("early"), std::nullopt) << "its record is withdrawn";
  EXPECT_EQ(stateOf("holder"), ipc::ClientState::Running);
  end(*held);
}

} // namespace
} // namespace mqx::test
