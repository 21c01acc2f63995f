// Soak (issue #8): hundreds of short queries through mqx-run on one mqxd,
// several at a time, bounded in time. Afterwards mqxd holds no more file
// descriptors than before, the node has exactly its own segment and queue
// (no client's queue or segment left behind), and mqxd's resident memory
// grew by less than a bound.
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>

#include <set>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node_fixture.hpp"

namespace mqx::test {
namespace {

using Soak = NodeFixture;

int countEntries(const std::string& directory, const std::string& containing) {
  int count = 0;
  if (DIR* dir = opendir(directory.c_str())) {
    while (dirent* entry = readdir(dir))
      if (std::string(entry->d_name).find(containing) != std::string::npos) ++count;
    closedir(dir);
  }
  return count;
}

long residentKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST_F(Soak, HundredsOfQueriesLeakNothing) {
  environment_["MQX_DAEMON_CAPACITY"] = "16MiB";
  startDaemon();
  const pid_t daemon = daemon_->pid();
  const std::string prefix = names().prefix;
  const int queries = 300, parallel = 6, warmup = 30;
  const int fdsBefore = countEntries("/proc/" + std::to_string(daemon) + "/fd", "");
  long rssAfterWarmup = 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<ChildProcess>> running;
  int finished = 0, correct = 0;
  std::set<pid_t> clientPids; // every process seen in a record, for its queues
  auto noteClients = [&] {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      if (record.state != ipc::ClientState::Free) clientPids.insert(record.pid);
  };
  for (int started = 0; started < queries || !running.empty();) {
    while (started < queries && static_cast<int>(running.size()) < parallel) {
      running.push_back(run({"--name", "soak" + std::to_string(started % 7), "--", SIM_CLIENT_PATH, "work", "2",
                             std::to_string((1 + started % 3) << 20), "2", std::to_string(started), "0"}));
      ++started;
    }
    for (auto it = running.begin(); it != running.end();) {
      const auto status = (*it)->wait(0ms);
      if (!status) {
        ++it;
        continue;
      }
      ++finished;
      correct += *status == 0;
      it = running.erase(it);
      if (finished == warmup) rssAfterWarmup = residentKiB(daemon);
    }
    noteClients();
    ASSERT_LT(std::chrono::steady_clock::now() - start, 110s) << "soak over its time bound";
    std::this_thread::sleep_for(1ms);
  }
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(waitUntilBudgetFree(1000ms)) << "still used: " << usedBytes();
  std::this_thread::sleep_for(300ms); // one more liveness pass
  const int fdsAfter = countEntries("/proc/" + std::to_string(daemon) + "/fd", "");
  const long rssAfter = residentKiB(daemon);
  std::printf("soak: %d queries (%d correct) in %.1f s; mqxd fds %d -> %d, RSS %ld KiB after %d queries -> %ld KiB\n",
              finished, correct, seconds, fdsBefore, fdsAfter, rssAfterWarmup, warmup, rssAfter);
  EXPECT_EQ(correct, queries);
  EXPECT_EQ(fdsAfter, fdsBefore) << "mqxd leaks file descriptors";
  EXPECT_EQ(countEntries("/dev/shm", prefix), 1) << "segments left in /dev/shm";
  int queuesLeft = 0;
  for (pid_t pid : clientPids)
    for (const auto& name : {names().evictQueue(pid), names().replyQueue(pid)}) {
      const mqd_t queue = mq_open(name.c_str(), O_RDONLY);
      if (queue != static_cast<mqd_t>(-1)) {
        ++queuesLeft;
        mq_close(queue);
      }
    }
  std::printf("soak: %zu client processes seen in records, %d of their queues left\n", clientPids.size(), queuesLeft);
  EXPECT_GT(clientPids.size(), 0u);
  EXPECT_EQ(queuesLeft, 0) << "client queues left behind";
  if (std::filesystem::is_directory("/dev/mqueue")) { // where mounted: nothing of the node but mqxd's queue
    EXPECT_EQ(countEntries("/dev/mqueue", prefix), 1) << "queues left in /dev/mqueue";
  }
  EXPECT_LT(rssAfter - rssAfterWarmup, 4096) << "mqxd's resident memory grows with the queries it served";
  ipc::RobustLock lock(segment_->state().lock);
  for (const auto& record : segment_->state().clients)
    EXPECT_EQ(record.state, ipc::ClientState::Free) << "a client record outlived its process";
}

} // namespace
} // namespace mqx::test
