// mqxd's life: start, refusal of a second daemon, clean shutdown on
// SIGTERM/SIGINT, recovery from a crashed daemon's segment; mqx-run's
// behaviour around it.
#include <sys/stat.h>

#include "node_fixture.hpp"

namespace mqx::test {
namespace {

using Lifecycle = NodeFixture;

TEST_F(Lifecycle, StartsAndRemovesItsObjectsOnSigterm) {
  startDaemon();
  struct stat info {};
  ASSERT_EQ(stat(("/dev/shm/" + names().segment).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(segment_->state().daemonPid, daemon_->pid());
  EXPECT_NE(ipc::MessageQueue::openForSending(names().daemonQueue), nullptr);
  segment_.reset();
  stopDaemon();
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr);
  EXPECT_EQ(ipc::MessageQueue::openForSending(names().daemonQueue), nullptr);
}

TEST_F(Lifecycle, AClientThatLeavesAtExitTakesItsQueuesAlong) {
  // libmqx.so never destroys its node client (it must outlive every hook
  // call at exit): leave() alone must remove the queues, since mqxd removes
  // only those of clients that died. A GPU query under mqx-run left two
  // queues behind each, and the node's 256 ran out.
  startDaemon();
  auto member = client({"leave-at-exit"});
  const pid_t pid = member->pid();
  ASSERT_EQ(member->wait(5s), 0);
  for (const std::string& name : {names().evictQueue(pid), names().replyQueue(pid)})
    EXPECT_EQ(ipc::MessageQueue::openForSending(name), nullptr) << name << " outlived its process";
}

TEST_F(Lifecycle, SigintStopsItToo) {
  startDaemon();
  daemon_->signal(SIGINT);
  EXPECT_EQ(daemon_->wait(5s), 0);
  daemon_.reset();
  EXPECT_EQ(ipc::SharedSegment::open(names()), nullptr);
}

TEST_F(Lifecycle, SecondDaemonOfTheSameNodeRefuses) {
  startDaemon();
  ChildProcess second({MQXD_PATH}, environment_);
  EXPECT_EQ(second.wait(5s), 1);
  EXPECT_EQ(segment_->state().daemonPid, daemon_->pid()) << "the running daemon's segment is untouched";
}

TEST_F(Lifecycle, RecoversFromTheSegmentOfACrashedDaemon) {
  startDaemon();
  const pid_t crashed = daemon_->pid();
  daemon_->signal(SIGKILL);
  EXPECT_EQ(daemon_->wait(5s), 128 + SIGKILL);
  daemon_.reset();
  segment_.reset();
  ASSERT_NE(ipc::SharedSegment::open(names()), nullptr) << "a killed daemon leaves its segment";
  startDaemon();
  EXPECT_NE(segment_->state().daemonPid, crashed);
  EXPECT_EQ(segment_->state().daemonPid, daemon_->pid());
  auto query = run({"--", "/bin/true"});
  EXPECT_EQ(query->wait(10s), 0);
}

TEST_F(Lifecycle, MqxRunWithoutDaemonSaysSoOrRunsAlone) {
  auto refused = run({"--", "/bin/true"});
  EXPECT_EQ(refused->wait(5s), 69);
  auto alone = run({"--allow-no-daemon", "--", "/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(alone->wait(5s), 7);
  auto configured = run({"--", "/bin/sh", "-c", "exit 5"}, {{"MQX_DAEMON_ALLOW_NO_DAEMON", "true"}});
  EXPECT_EQ(configured->wait(5s), 5);
}

TEST_F(Lifecycle, MqxRunReturnsTheQueryStatusAndForwardsSignals) {
  startDaemon();
  auto failing = run({"--", "/bin/sh", "-c", "exit 9"});
  EXPECT_EQ(failing->wait(10s), 9);
  auto missing = run({"--", "/nonexistent/query"});
  EXPECT_EQ(missing->wait(10s), 127);
  // The query reports SIGTERM, which mqx-run forwards to it.
  auto query =
      run({"--", "/bin/sh", "-c", "trap 'echo got-term; exit 42' TERM; echo started; while :; do sleep 0.01; done"});
  ASSERT_TRUE(query->waitForLine("started", 10s));
  query->signal(SIGTERM);
  EXPECT_TRUE(query->waitForLine("got-term", 5s));
  EXPECT_EQ(query->wait(5s), 42);
}

} // namespace
} // namespace mqx::test
