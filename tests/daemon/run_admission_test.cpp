// RunAdmission: mqx-run's admission as a state machine (daemon/run_admission),
// against a real mqxd, with a program that is only pretended: what the
// machine starts, polls and stops is recorded, nothing is forked. mqx-run
// itself, with real programs, is tested in lifecycle_test.cpp,
// start_before_admission_test.cpp and robustness_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node_fixture.hpp"
#include "run_admission.hpp"

namespace mqx::test {
namespace {

using daemon::QueryProgram;
using daemon::RunAdmission;
using daemon::RunAdmissionSettings;
using State = RunAdmission::State;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

class PretendedProgram final : public QueryProgram {
public:
  pid_t start(std::uint32_t querySlot, const std::string& device, bool awaitAdmission) override {
    std::lock_guard lock(mutex_);
    starts.push_back({querySlot, device, awaitAdmission});
    return failToStart ? -1 : nextPid++;
  }
  std::optional<int> ended(pid_t pid) override {
    std::lock_guard lock(mutex_);
    polled = true;
    return pid == endsAs.first ? std::optional<int>(endsAs.second) : std::nullopt;
  }
  void stop(pid_t pid) override {
    std::lock_guard lock(mutex_);
    stopped.push_back(pid);
  }

  struct Start {
    std::uint32_t querySlot;
    std::string device;
    bool awaitAdmission;
  };
  std::vector<Start> starts;
  std::vector<pid_t> stopped;
  std::pair<pid_t, int> endsAs{0, 0}; // the pid that has ended, and its status
  bool failToStart = false;
  std::atomic<bool> polled{false};
  pid_t nextPid = 40000;

private:
  std::mutex mutex_;
};

class RunAdmissionTest : public NodeFixture {
protected:
  RunAdmissionSettings settings(const std::string& name, std::uint64_t demand, bool startBeforeAdmission = true) {
    RunAdmissionSettings settings;
    settings.name = name;
    settings.weightedDemand = settings.peakDemand = demand;
    settings.node.instance = instance_;
    settings.startBeforeAdmission = startBeforeAdmission;
    settings.placementWait = std::chrono::seconds(5);
    return settings;
  }
  // A query of 30 MiB of the node's 32 that runs (mqx-run, sleeping), so
  // that another one of 30 MiB waits.
  std::unique_ptr<ChildProcess> holder() {
    auto holder = run({"--plan", plan("holder", 30), "--start-when-admitted", "--", "sleep", "60"});
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (stateOf("holder") != ipc::ClientState::Running && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    EXPECT_EQ(stateOf("holder"), ipc::ClientState::Running);
    return holder;
  }
  void end(std::unique_ptr<ChildProcess> holder) {
    holder->signal(SIGTERM); // forwarded to the query
    EXPECT_EQ(holder->wait(5s), 128 + SIGTERM);
  }
};

TEST_F(RunAdmissionTest, WithoutADaemonItEndsAtOnceWithNoDaemon) {
  PretendedProgram program;
  RunAdmission admission(settings("q", kMiB), program);
  EXPECT_EQ(admission.run(), State::NoDaemon);
  EXPECT_TRUE(program.starts.empty());
}

TEST_F(RunAdmissionTest, AQueryStartedBeforeItsAdmissionIsPlacedThenAdmitted) {
  startDaemon();
  PretendedProgram program;
  RunAdmission admission(settings("q", kMiB), program);
  EXPECT_EQ(admission.step(), State::Placing);
  EXPECT_EQ(admission.step(), State::Waiting);
  ASSERT_EQ(program.starts.size(), 1u);
  EXPECT_TRUE(program.starts[0].awaitAdmission);
  // Placed before its admission, on the node's one device: the simulated
  // sim-0 here, the GPU's UUID where mqxd found a GPU.
  std::string identity;
  {
    ipc::RobustLock lock(segment_->state().lock);
    identity = segment_->state().identityOf(0);
  }
  EXPECT_FALSE(identity.empty());
  EXPECT_EQ(program.starts[0].device, identity);
  EXPECT_EQ(program.starts[0].querySlot, admission.client().membership().slot());
  EXPECT_EQ(admission.step(), State::Admitted);
  EXPECT_EQ(admission.step(), State::Admitted); // final
  EXPECT_EQ(admission.early(), 40000);
  EXPECT_EQ(stateOf("q"), ipc::ClientState::Running);
}

TEST_F(RunAdmissionTest, AQueryStartedWhenAdmittedStartsNothingBeforeIt) {
  startDaemon();
  PretendedProgram program;
  RunAdmission admission(settings("q", kMiB, false), program);
  EXPECT_EQ(admission.run(), State::Admitted);
  EXPECT_TRUE(program.starts.empty());
  EXPECT_EQ(admission.early(), 0);
}

TEST_F(RunAdmissionTest, AProgramThatCannotStartEndsTheAdmission) {
  startDaemon();
  PretendedProgram program;
  program.failToStart = true;
  RunAdmission admission(settings("q", kMiB), program);
  EXPECT_EQ(admission.run(), State::StartFailed);
}

TEST_F(RunAdmissionTest, AProgramThatEndsWhileItWaitsEndsTheWaitWithItsStatus) {
  startDaemon();
  auto running = holder();
  PretendedProgram program;
  program.endsAs = {40000, 3};
  RunAdmission admission(settings("q", 30 * kMiB), program);
  EXPECT_EQ(admission.run(), State::EndedBeforeAdmission);
  EXPECT_EQ(admission.endedStatus(), 3);
  EXPECT_EQ(admission.early(), 0);
  EXPECT_TRUE(program.stopped.empty()); // it ended by itself
  EXPECT_EQ(stateOf("q"), std::nullopt) << "the record is withdrawn";
  end(std::move(running));
}

TEST_F(RunAdmissionTest, AQueryNotAdmittedInTimeIsWithdrawnThenItsProgramStopped) {
  startDaemon();
  auto running = holder();
  PretendedProgram program;
  RunAdmissionSettings waiting = settings("q", 30 * kMiB);
  waiting.timeout = std::chrono::seconds(1);
  RunAdmission admission(waiting, program);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(admission.run(), State::TimedOut);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
  EXPECT_EQ(program.stopped, std::vector<pid_t>{40000});
  EXPECT_EQ(stateOf("q"), std::nullopt);
  end(std::move(running));
}

TEST_F(RunAdmissionTest, WhenTheDaemonGoesItsProgramStopsAndItWaitsForTheNextOne) {
  startDaemon();
  auto running = holder();
  PretendedProgram program;
  RunAdmissionSettings waiting = settings("q", 30 * kMiB);
  waiting.restartWait = std::chrono::seconds(1);
  RunAdmission admission(waiting, program);
  std::atomic<State> outcome{State::Connecting};
  std::thread waiter([&] { outcome = admission.run(); });
  while (!program.polled)
    std::this_thread::sleep_for(10ms);
  stopDaemon();
  waiter.join();
  EXPECT_EQ(outcome.load(), State::DaemonNotBack);
  EXPECT_EQ(program.stopped, std::vector<pid_t>{40000});
  end(std::move(running));
}

TEST_F(RunAdmissionTest, AQueryAsksTheDaemonThatComesBackAndStartsItsProgramAgain) {
  startDaemon();
  auto running = holder();
  PretendedProgram program;
  RunAdmissionSettings waiting = settings("q", 30 * kMiB);
  waiting.restartWait = std::chrono::seconds(30);
  RunAdmission admission(waiting, program);
  while (admission.state() != State::Waiting)
    admission.step();
  std::thread restart([&] {
    while (!program.polled)
      std::this_thread::sleep_for(10ms);
    stopDaemon();
    startDaemon(); // without the holder: the old node went with its mqxd
  });
  EXPECT_EQ(admission.step(), State::DaemonRestarted);
  restart.join();
  EXPECT_EQ(admission.run(), State::Admitted);
  ASSERT_EQ(program.starts.size(), 2u) << "started again for the new record";
  EXPECT_EQ(program.stopped, std::vector<pid_t>{40000});
  EXPECT_EQ(admission.early(), 40001);
  end(std::move(running));
}

} // namespace
} // namespace mqx::test
