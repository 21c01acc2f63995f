// MPS management by mqxd (daemon.mps): detection of a running control
// daemon, starting one when asked to manage it and stopping only the one it
// started. The control program is tests/launch_service/fake_mps_control.sh,
// a real background process that behaves like nvidia-cuda-mps-control.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ipc/node_state.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

// An exited daemon not yet reaped by its new parent is not alive.
bool alive(pid_t pid) { return ipc::processAlive(pid); }

class MpsNode : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    pipes_ = "/tmp/mqx-mps-" + instance_;
    std::filesystem::remove_all(pipes_);
    environment_["MQX_DAEMON_MPS_CONTROL"] = FAKE_MPS_CONTROL;
    environment_["MQX_DAEMON_MPS_PIPE_DIRECTORY"] = pipes_;
    environment_["MQX_LOG_LEVEL"] = "info";
  }
  void TearDown() override {
    if (controlPipeExists()) control("", "quit\n");
    NodeFixture::TearDown();
    std::filesystem::remove_all(pipes_);
  }
  bool controlPipeExists() const {
    struct stat info {};
    return stat((pipes_ + "/control").c_str(), &info) == 0 && S_ISFIFO(info.st_mode);
  }
  pid_t controlDaemonPid() const {
    pid_t pid = 0;
    std::ifstream(pipes_ + "/nvidia-cuda-mps-control.pid") >> pid;
    return pid;
  }
  // Runs the control program as a user would, with input on its stdin.
  int control(const std::string& argument, const std::string& input) {
    const std::string command = "printf '" + input + "' | CUDA_MPS_PIPE_DIRECTORY=" + pipes_ + " " + FAKE_MPS_CONTROL +
                                (argument.empty() ? "" : " " + argument);
    return std::system(command.c_str());
  }
  bool waitUntilGone(pid_t pid) {
    for (int i = 0; i < 500 && (alive(pid) || controlPipeExists()); ++i)
      std::this_thread::sleep_for(10ms);
    return !alive(pid) && !controlPipeExists();
  }
  std::string pipes_;
};

TEST_F(MpsNode, ManageStartsAControlDaemonAndStopsItAtShutdown) {
  environment_["MQX_DAEMON_MPS"] = "manage";
  ASSERT_FALSE(controlPipeExists());
  startDaemon();
  EXPECT_TRUE(controlPipeExists());
  const pid_t daemon = controlDaemonPid();
  EXPECT_TRUE(alive(daemon));
  stopDaemon();
  EXPECT_TRUE(waitUntilGone(daemon)) << "the control daemon mqxd started still runs";
}

TEST_F(MpsNode, ManageUsesARunningControlDaemonAndLeavesItRunning) {
  ASSERT_EQ(control("-d", ""), 0);
  const pid_t daemon = controlDaemonPid();
  ASSERT_TRUE(alive(daemon));
  environment_["MQX_DAEMON_MPS"] = "manage";
  startDaemon();
  stopDaemon();
  EXPECT_TRUE(controlPipeExists());
  EXPECT_TRUE(alive(daemon)) << "mqxd stopped a control daemon it did not start";
  EXPECT_EQ(control("", "quit\n"), 0);
  EXPECT_TRUE(waitUntilGone(daemon));
}

TEST_F(MpsNode, DetectNeitherStartsNorStops) {
  environment_["MQX_DAEMON_MPS"] = "detect";
  startDaemon();
  EXPECT_FALSE(controlPipeExists());
  stopDaemon();
  ASSERT_EQ(control("-d", ""), 0);
  const pid_t daemon = controlDaemonPid();
  startDaemon();
  stopDaemon();
  EXPECT_TRUE(alive(daemon));
}

TEST_F(MpsNode, ManageWithAMissingControlProgramFailsAtStart) {
  environment_["MQX_DAEMON_MPS"] = "manage";
  environment_["MQX_DAEMON_MPS_CONTROL"] = "/nonexistent/nvidia-cuda-mps-control";
  ChildProcess daemon({MQXD_PATH}, environment_);
  EXPECT_EQ(daemon.wait(10s), 1);
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr) << "a failed mqxd left its segment";
}

TEST_F(MpsNode, UnknownModeIsAConfigurationError) {
  environment_["MQX_DAEMON_MPS"] = "sometimes";
  ChildProcess daemon({MQXD_PATH}, environment_);
  EXPECT_EQ(daemon.wait(10s), 1);
}

} // namespace
} // namespace mqx::test
