// The node's objects are private to the user, and mqxd acts on a message
// only when the pid in it is the registered process of the record it names
// (issue #8). POSIX queues do not tell the receiver who sent a message, so
// a process of the same user can still claim another's pid; the objects'
// 0600 modes keep every other user out.
#include <fcntl.h>
#include <mqueue.h>
#include <sys/stat.h>

#include "ipc/node_membership.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

using Security = NodeFixture;

unsigned modeOf(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return 0;
  return info.st_mode & 0777;
}

// A POSIX queue's mode, through its descriptor (/dev/mqueue need not be
// mounted).
unsigned queueModeOf(const std::string& name) {
  const mqd_t queue = mq_open(name.c_str(), O_RDONLY);
  if (queue == static_cast<mqd_t>(-1)) return 0;
  struct stat info {};
  const int result = fstat(queue, &info);
  mq_close(queue);
  return result == 0 ? info.st_mode & 0777 : 0;
}

TEST_F(Security, SegmentAndQueuesAreUserOnlyWithPerUserNames) {
  startDaemon();
  const std::string user = "mqx-" + std::to_string(getuid()) + "-";
  EXPECT_EQ(names().segment.rfind(user, 0), 0u) << names().segment;
  EXPECT_EQ(names().daemonQueue.rfind("/" + user, 0), 0u) << names().daemonQueue;
  EXPECT_EQ(modeOf("/dev/shm/" + names().segment), 0600u);
  EXPECT_EQ(queueModeOf(names().daemonQueue), 0600u);
  auto member = std::make_unique<ChildProcess>(
      std::vector<std::string>{HOLD_CLIENT_PATH, "hold-budget", std::to_string(1 << 20), "0"}, environment_);
  ASSERT_TRUE(member->waitForLine("held", 10s));
  EXPECT_EQ(queueModeOf(names().evictQueue(member->pid())), 0600u);
  EXPECT_EQ(queueModeOf(names().replyQueue(member->pid())), 0600u);
  // Under a umask that would open them to everyone, they stay 0600.
  const mode_t previous = umask(0);
  auto second = std::make_unique<ChildProcess>(
      std::vector<std::string>{HOLD_CLIENT_PATH, "hold-budget", std::to_string(1 << 20), "0"}, environment_);
  umask(previous);
  ASSERT_TRUE(second->waitForLine("held", 10s));
  EXPECT_EQ(queueModeOf(names().evictQueue(second->pid())), 0600u);
}

// A waiting query's record is changed by a message only when the message's
// pid is the record's: a forged pid (a process that is not the registered
// client of that slot) changes nothing; the genuine sender does.
TEST_F(Security, MessagesNamingAnotherClientsRecordAreRefused) {
  environment_["MQX_DAEMON_CAPACITY"] = "4MiB";
  startDaemon();
  // Another live client of the node.
  auto holder = std::make_unique<ChildProcess>(
      std::vector<std::string>{HOLD_CLIENT_PATH, "hold-budget", std::to_string(4 << 20), "0"}, environment_);
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  auto query = ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Query, "victim");
  ASSERT_NE(query, nullptr);
  const std::uint32_t slot = query->slot();
  auto demandOf = [&] {
    ipc::RobustLock lock(segment_->state().lock);
    return segment_->state().clients[slot].weightedDemand;
  };
  auto sendAndSettle = [&](pid_t pid, std::uint64_t demand, ipc::MessageKind kind) {
    ipc::Message message = ipc::Message::of(kind, pid, slot);
    message.weightedDemand = message.peakDemand = demand;
    ASSERT_TRUE(ipc::sendTo(names().daemonQueue, message));
    std::this_thread::sleep_for(300ms);
  };
  for (auto kind :
       {ipc::MessageKind::AdmissionRequest, ipc::MessageKind::DemandUpdate, ipc::MessageKind::FootprintUpdate}) {
    sendAndSettle(holder->pid(), std::uint64_t{3} << 30, kind); // a live process, not this record's
    EXPECT_EQ(demandOf(), 0u) << "a message from another client changed this record";
    sendAndSettle(getpid() + 100000, std::uint64_t{3} << 30, kind); // no such process
    EXPECT_EQ(demandOf(), 0u) << "a message from an unregistered pid changed this record";
  }
  sendAndSettle(getpid(), std::uint64_t{2} << 20, ipc::MessageKind::DemandUpdate);
  EXPECT_EQ(demandOf(), std::uint64_t{2} << 20) << "the registered client's own message must be honoured";
}

} // namespace
} // namespace mqx::test
