// NodeFixture: a test with its own node: a fresh daemon.instance name (so
// tests and test runs never share IPC objects), mqxd started as a real
// process, and helpers to start clients and look at the segment.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/node_state.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::test {

using namespace std::chrono_literals;

class NodeFixture : public ::testing::Test {
protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    instance_ = "t" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    environment_ = {{"MQX_DAEMON_INSTANCE", instance_},
                    {"MQX_DAEMON_CAPACITY", "32MiB"},
                    {"MQX_DAEMON_ADMISSION", "weight"}, // the tests of adaptive admission name it
                    {"MQX_DAEMON_DEMAND_STATE_FILE", "/tmp/mqx-test-demand-" + instance_},
                    {"MQX_MEMORY_PAGE_SIZE", "1MiB"},
                    {"MQX_SIM_GRANULARITY", "1MiB"},
                    {"MQX_SIM_CAPACITY", "64MiB"},
                    {"MQX_MEMORY_SWAP_BUFFER_LIMIT", "256MiB"},
                    {"MQX_MEMORY_PINNED_SWAP", "false"},
                    // No pool of host blocks, also on a GPU host (where "auto"
                    // makes one): the tests of the pool ask for it.
                    {"MQX_DAEMON_HOST_BLOCK_POOL", "0"},
                    {"MQX_LOG_LEVEL", "warn"},
                    // One device, also on a GPU host of several: these tests
                    // are of one budget (tests/daemon/devices_test.cpp has
                    // the node of several).
                    {"CUDA_VISIBLE_DEVICES", "0"}};
  }
  void TearDown() override {
    for (const auto& path : plans_)
      std::remove(path.c_str());
    stopDaemon();
    std::remove(("/tmp/mqx-test-demand-" + instance_).c_str());
    // The node's files in the runtime directory: its name, mqxd's lock and
    // its list of clients alive at its shutdown (docs/daemon.md).
    const ipc::IpcNames node = names();
    for (const std::string& path : {node.nodeNameFile, node.lockFile, node.rosterFile})
      std::remove(path.c_str());
    removeQueuesOfThisNode();
  }

  // The POSIX queues left by this test's node: a client killed by the test
  // after mqxd stopped keeps its reply and eviction queues; mqxd removes
  // those only when the same instance starts again (removeQueuesOfDead),
  // which a test's fresh instance never does. A full CI run left one
  // (mqx-<uid>-t<pid>-0-…-reply-<pid>). Tests that check that nothing is
  // left check before this. Where /dev/mqueue is not mounted the queues
  // cannot be listed, and nothing is done.
  void removeQueuesOfThisNode() const {
    const ipc::IpcNames node = names();
    if (!node.problem.empty()) return;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/mqueue", error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(node.prefix + "-", 0) == 0) (void)ipc::removeQueue("/" + name);
    }
  }

  // The node's names as they were when mqxd last started: mqxd gives the
  // node a new name when it stops with no clients left, and a test checks
  // that the objects of the node it ran are gone.
  ipc::IpcNames names() const {
    if (!names_) names_ = ipc::IpcNames::forInstance(instance_, getuid());
    return *names_;
  }

  // Starts mqxd and waits until its segment is there. With
  // `mergeStandardError`, its log lines come through daemon_'s stdout too.
  void startDaemon(bool mergeStandardError = false) {
    names_ = ipc::IpcNames::forInstance(instance_, getuid());
    daemon_ = std::make_unique<ChildProcess>(std::vector<std::string>{MQXD_PATH}, environment_, mergeStandardError);
    ASSERT_TRUE(daemon_->waitForLine("mqxd: ready (" + names().segment + ")", 5s)) << "mqxd did not start";
    segment_ = ipc::SharedSegment::open(names());
    ASSERT_NE(segment_, nullptr);
  }
  void stopDaemon() {
    if (!daemon_) return;
    daemon_->signal(SIGTERM);
    auto status = daemon_->wait(5s);
    EXPECT_EQ(status, 0) << "mqxd did not stop cleanly";
    daemon_.reset();
  }

  std::unique_ptr<ChildProcess> client(const std::vector<std::string>& args,
                                       const std::map<std::string, std::string>& extra = {},
                                       bool mergeStandardError = false) {
    std::vector<std::string> argv{SIM_CLIENT_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    auto environment = environment_;
    for (const auto& [key, value] : extra)
      environment[key] = value;
    return std::make_unique<ChildProcess>(argv, environment, mergeStandardError);
  }
  // mqx-run ARGS. A query that stands for a CUDA program runs as
  // `SIM_CLIENT_PATH gate COMMAND...`: mqx-run starts it before admission
  // (daemon.start_before_admission) and the gate holds it until mqxd admits
  // it, as libmqx.so's cuInit does; what COMMAND logs happens on the device's
  // side of the gate.
  std::unique_ptr<ChildProcess> run(const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& extra = {},
                                    bool mergeStandardError = false) {
    std::vector<std::string> argv{MQX_RUN_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    auto environment = environment_;
    for (const auto& [key, value] : extra)
      environment[key] = value;
    return std::make_unique<ChildProcess>(argv, environment, mergeStandardError);
  }

  // A plan file of one operator of `mib` MiB (mqx-run --plan), removed at
  // the end of the test.
  std::string plan(const std::string& name, std::uint64_t mib) {
    const std::string path = "/tmp/mqx-plan-" + instance_ + "-" + name;
    std::ofstream(path) << "name = \"" << name << "\"\n[[operator]]\ntime = 1.0\nmemory = \"" << mib << "MiB\"\n";
    plans_.push_back(path);
    return path;
  }
  // The state of the query record named `name`, if it has one.
  std::optional<ipc::ClientState> stateOf(const std::string& name) {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      if (record.state != ipc::ClientState::Free && name == record.name) return record.state;
    return std::nullopt;
  }

  std::uint64_t usedBytes() {
    ipc::RobustLock lock(segment_->state().lock);
    return segment_->state().usedBytes();
  }
  // Polls until the node's budget is all free; the time it took.
  std::optional<std::chrono::milliseconds> waitUntilBudgetFree(std::chrono::milliseconds timeout) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < timeout) {
      if (usedBytes() == 0)
        return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
  }

  std::string instance_;
  std::map<std::string, std::string> environment_;
  std::unique_ptr<ChildProcess> daemon_;
  std::unique_ptr<ipc::SharedSegment> segment_;
  std::vector<std::string> plans_; // plan()'s files
  mutable std::optional<ipc::IpcNames> names_;
};

} // namespace mqx::test
