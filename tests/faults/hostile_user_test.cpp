// The hostile-user suite (ctest -L security; docs/hardening.md, "Threat
// model"): another user squatting on the node's names, links planted where
// mqx writes files, unbounded inputs, floods and stray signals. The tests
// that need a second user fork and setuid to nobody, which only root may;
// elsewhere they are skipped with the reason.
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/files.hpp"
#include "demand_history.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/shared_segment.hpp"
#include "node_fixture.hpp"
#include "trace/trace_file.hpp"

namespace mqx::test {
namespace {

constexpr uid_t kNobody = 65534;

using HostileUser = NodeFixture;

// A process of another user (nobody) that made objects at the given names
// and lives until the object goes (the segment it made names it as its
// mqxd). Its objects are removed at the end (root may).
class Squatter {
public:
  // Each name: a shared-memory segment (no leading '/', holding a valid
  // node header naming the squatter as its daemon) or a queue ('/...'),
  // mode 0666.
  explicit Squatter(std::vector<std::string> names) : names_(std::move(names)) {
    int ready[2];
    // Close-on-exec: a process the test starts must not hold the release pipe open.
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(release_, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(release_[1]);
      if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(3);
      umask(0);
      for (const std::string& name : names_) {
        if (name[0] == '/') {
          mq_attr attributes{};
          attributes.mq_maxmsg = 8;
          attributes.mq_msgsize = sizeof(ipc::Message);
          if (mq_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666, &attributes) == static_cast<mqd_t>(-1)) _exit(4);
          continue;
        }
        const int object = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666);
        if (object < 0 || ftruncate(object, sizeof(ipc::NodeState)) != 0) _exit(5);
        void* mapping = mmap(nullptr, sizeof(ipc::NodeState), PROT_READ | PROT_WRITE, MAP_SHARED, object, 0);
        if (mapping == MAP_FAILED) _exit(6);
        auto* state = new (mapping) ipc::NodeState();
        state->layoutBytes = sizeof(ipc::NodeState);
        state->deviceCount = 1;
        state->devices[0].capacity = 1 << 30;
        state->daemonPid = getpid();
        ipc::sealHeader(*state);
      }
      [[maybe_unused]] const auto said = write(ready[1], "r", 1);
      char byte;
      [[maybe_unused]] const auto got = read(release_[0], &byte, 1); // until the test ends
      _exit(0);
    }
    close(ready[1]);
    close(release_[0]);
    char byte = 0;
    made_ = read(ready[0], &byte, 1) == 1;
    close(ready[0]);
  }
  ~Squatter() {
    close(release_[1]);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    for (const std::string& name : names_)
      name[0] == '/' ? mq_unlink(name.c_str()) : shm_unlink(name.c_str());
  }
  bool made() const { return made_; }
  pid_t pid() const { return pid_; }

private:
  std::vector<std::string> names_;
  int release_[2] = {-1, -1};
  pid_t pid_ = -1;
  bool made_ = false;
};

uid_t ownerOfSegment(const std::string& name) {
  const int object = shm_open(name.c_str(), O_RDONLY, 0);
  struct stat status {};
  const bool known = object >= 0 && fstat(object, &status) == 0;
  if (object >= 0) close(object);
  return known ? status.st_uid : static_cast<uid_t>(-1);
}

uid_t ownerOfQueue(const std::string& name) {
  const mqd_t queue = mq_open(name.c_str(), O_RDONLY);
  struct stat status {};
  const bool known = queue != static_cast<mqd_t>(-1) && fstat(queue, &status) == 0;
  if (queue != static_cast<mqd_t>(-1)) mq_close(queue);
  return known ? status.st_uid : static_cast<uid_t>(-1);
}

#define REQUIRE_A_SECOND_USER()                                                                                        \
  if (getuid() != 0) GTEST_SKIP() << "needs root to run a second user (fork and setuid to nobody)"

// Another user made the segment and mqxd's queue at this node's names, mode
// 0666, the segment naming a live process as its mqxd (issue 33: A's mqxd
// said "already running (pid <B's>)", A's status showed B's node, A's
// mqx-run joined it). Now: mqxd refuses to start, naming the owner, and
// leaves the objects; mqx-run and a client do not join.
TEST_F(HostileUser, ObjectsOfAnotherUserAtTheNodesNamesAreRefusedNotUsed) {
  REQUIRE_A_SECOND_USER();
  const ipc::IpcNames node = names();
  Squatter squatter({node.segment, node.daemonQueue});
  ASSERT_TRUE(squatter.made());
  ChildProcess daemon({MQXD_PATH}, environment_, true);
  EXPECT_EQ(daemon.wait(5s), 1);
  const std::string log = daemon.readRest(1s);
  EXPECT_NE(log.find("belongs to uid 65534"), std::string::npos) << log;
  EXPECT_EQ(log.find("already running"), std::string::npos) << log;
  EXPECT_EQ(ownerOfSegment(node.segment), kNobody) << "mqxd removed another user's segment";
  EXPECT_EQ(ownerOfQueue(node.daemonQueue), kNobody) << "mqxd removed another user's queue";

  std::string why;
  bool notOurs = false;
  EXPECT_EQ(ipc::SharedSegment::open(node, &why, nullptr, &notOurs), nullptr);
  EXPECT_TRUE(notOurs);
  EXPECT_NE(why.find("belongs to uid 65534"), std::string::npos) << why;
  EXPECT_EQ(ipc::MessageQueue::openForSending(node.daemonQueue), nullptr) << "a foreign queue gets our messages";
  auto query = run({"--", "/bin/true"}, {}, true);
  EXPECT_EQ(query->wait(10s), 69) << "mqx-run joined another user's node";
  const std::string said = query->readRest(1s);
  EXPECT_NE(said.find("belongs to uid 65534"), std::string::npos) << said;
}

// The names of before (mqx-<uid>-<instance>-node, the daemon queue beside
// it) are now only a prefix: objects of another user there are never looked
// at, and the node runs.
TEST_F(HostileUser, TheOldPredictableNamesTakenByAnotherUserDoNotMatter) {
  REQUIRE_A_SECOND_USER();
  const std::string old = "mqx-" + std::to_string(getuid()) + "-" + instance_;
  Squatter squatter({old + "-node", "/" + old + "-daemon"});
  ASSERT_TRUE(squatter.made());
  startDaemon();
  EXPECT_EQ(segment_->state().daemonPid, daemon_->pid());
  auto query = run({"--", "/bin/true"});
  EXPECT_EQ(query->wait(20s), 0);
}

// A queue of another user at the name of one of ours: never used, never
// removed (root could remove it).
TEST_F(HostileUser, AQueueOfAnotherUserAtOneOfOurNamesIsNeitherUsedNorRemoved) {
  REQUIRE_A_SECOND_USER();
  const std::string name = names().replyQueue(999'999);
  Squatter squatter({name});
  ASSERT_TRUE(squatter.made());
  try {
    ipc::MessageQueue::create(name);
    ADD_FAILURE() << "created over another user's queue";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("belongs to uid 65534"), std::string::npos) << error.what();
  }
  EXPECT_EQ(ipc::MessageQueue::openForSending(name), nullptr);
  EXPECT_FALSE(ipc::removeQueue(name));
  EXPECT_EQ(ownerOfQueue(name), kNobody);
}

// The runtime directory holding the node's name: ours, 0700, not a link.
TEST(RuntimeDirectory, OnlyAPrivateDirectoryOfOurOwnIsUsed) {
  const std::string base = "/tmp/mqx-runtime-test-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  ASSERT_TRUE(std::filesystem::create_directory(base));
  const std::string fresh = base + "/fresh";
  EXPECT_EQ(ensurePrivateDirectory(fresh), "");
  struct stat status {};
  ASSERT_EQ(lstat(fresh.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0700u);

  const std::string open = base + "/open";
  ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  EXPECT_NE(ensurePrivateDirectory(open).find("mode 0777"), std::string::npos);

  const std::string link = base + "/link";
  ASSERT_EQ(symlink(fresh.c_str(), link.c_str()), 0);
  EXPECT_NE(ensurePrivateDirectory(link).find("symbolic link"), std::string::npos);

  if (getuid() == 0) {
    const std::string foreign = base + "/foreign";
    ASSERT_EQ(mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(chown(foreign.c_str(), kNobody, kNobody), 0);
    EXPECT_NE(ensurePrivateDirectory(foreign).find("belongs to uid 65534"), std::string::npos);
  }
  std::filesystem::remove_all(base);
}

// --- Files written where others may plant links ------------------------------

class PlantedLinks : public ::testing::Test {
protected:
  void SetUp() override {
    folder_ = "/tmp/mqx-links-" + std::to_string(getpid());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directory(folder_);
    victim_ = folder_ + "/victim";
    std::ofstream(victim_) << "precious\n";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  // A link at `path` to the victim.
  void plant(const std::string& path) { ASSERT_EQ(symlink(victim_.c_str(), path.c_str()), 0) << path; }
  std::string victim() const {
    std::ifstream file(victim_);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }
  bool regularFile(const std::string& path) const {
    struct stat status {};
    return lstat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
  }

  std::string folder_, victim_;
};

TEST_F(PlantedLinks, ATraceFileReplacesALinkAndNeverWritesThroughIt) {
  const std::string path = folder_ + "/mqx-trace-1.json";
  plant(path);
  {
    trace::TraceFile file(path);
    ASSERT_TRUE(file.write("{\"traceEvents\": []}"));
  }
  EXPECT_EQ(victim(), "precious\n");
  EXPECT_TRUE(regularFile(path));
}

TEST_F(PlantedLinks, TheDemandHistoryReplacesALinkAndItsOldTemporaryIsNoWayIn) {
  const std::string path = folder_ + "/demand";
  plant(path);
  plant(path + ".tmp"); // the fixed temporary of before
  daemon::DemandHistory history(path);
  history.record("q1", 5 << 20);
  EXPECT_EQ(victim(), "precious\n");
  EXPECT_TRUE(regularFile(path));
  EXPECT_EQ(daemon::DemandHistory(path).demandOf("q1"), std::uint64_t{5} << 20);
}

TEST_F(PlantedLinks, AFileReplacedInASharedFolderIsANewFile) {
  const std::string path = folder_ + "/metrics.prom";
  plant(path);
  EXPECT_EQ(writeFileReplacing(path, "mqx_up 1\n", 0644), "");
  EXPECT_EQ(victim(), "precious\n");
  ASSERT_TRUE(regularFile(path));
  struct stat status {};
  ASSERT_EQ(stat(path.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0644u);
  // No temporary left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder_))
    ++entries;
  EXPECT_EQ(entries, 2u);
}

using MetricsLinks = HostileUser;

TEST_F(MetricsLinks, MqxdsMetricsFileReplacesALinkAndHidesIdentitiesByDefault) {
  const std::string folder = "/tmp/mqx-metrics-links-" + instance_;
  std::filesystem::create_directory(folder);
  const std::string victim = folder + "/victim", path = folder + "/metrics.prom";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
  environment_["MQX_DAEMON_METRICS_FILE"] = path;
  environment_["MQX_DAEMON_METRICS_INTERVAL_MS"] = "50";
  startDaemon();
  auto query =
      ipc::NodeMembership::connect(ipc::NodeOptions{instance_}, ipc::NodeMembership::Role::Query, "secret-query-name");
  ASSERT_NE(query, nullptr);
  std::string text;
  for (int i = 0; i < 100 && text.find("secret") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    std::ifstream file(path);
    text.assign(std::istreambuf_iterator<char>(file), {});
    if (text.find("mqx_client_weighted_demand_bytes{") != std::string::npos) break;
  }
  EXPECT_NE(text.find("mqx_client_weighted_demand_bytes{"), std::string::npos) << text;
  EXPECT_EQ(text.find("secret-query-name"), std::string::npos) << "a query's name in the metrics by default";
  EXPECT_EQ(text.find("pid=\""), std::string::npos) << "pids in the metrics by default";
  std::ifstream kept(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "precious\n");
  struct stat status {};
  ASSERT_EQ(lstat(path.c_str(), &status), 0);
  EXPECT_TRUE(S_ISREG(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0644u);
  query.reset();
  stopDaemon();
  std::filesystem::remove_all(folder);
}

// --- Bounded input ----------------------------------------------------------------

using PlanFiles = HostileUser;

// mqx-run --plan read /dev/zero without end (3.4 GB), blocked on a FIFO for
// ever, took a 20 MB plan, and called a directory a plan without operators.
TEST_F(PlanFiles, DevicesPipesDirectoriesAndHugeFilesAreRefusedInOneLine) {
  const std::string fifo = "/tmp/mqx-plan-fifo-" + instance_, huge = "/tmp/mqx-plan-huge-" + instance_;
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  {
    std::ofstream file(huge);
    file << "[[operator]]\ntime = 1.0\nmemory = \"1MiB\"\n";
    file << std::string(20 << 20, '#') << "\n";
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "is not a regular file"},
      {fifo, "is not a regular file"},
      {"/tmp", "is a directory"},
      {huge, "is larger than 1024 KiB"},
  };
  for (const auto& [plan, why] : cases) {
    auto query = run({"--plan", plan, "--", "/bin/true"}, {}, true);
    EXPECT_EQ(query->wait(5s), 78) << plan;
    const std::string said = query->readRest(1s);
    EXPECT_NE(said.find(why), std::string::npos) << plan << ": " << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  }
  std::remove(fifo.c_str());
  std::remove(huge.c_str());
}

// --- mqx-run's command line and exit status ------------------------------------------

TEST_F(HostileUser, MqxRunsCommandLineMistakesAreNamedAndItsOwnFailuresHaveTheirCode) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--timeout"}, "--timeout needs a value"},
      {{"--name", "--", "/bin/true"}, "--name needs a value"},
      {{"--start-before-admission", "--start-when-admitted", "--", "/bin/true"}, "exclude each other"},
  };
  for (const auto& [arguments, why] : cases) {
    auto query = run(arguments, {}, true);
    EXPECT_EQ(query->wait(5s), 2) << arguments[0];
    const std::string said = query->readRest(1s);
    EXPECT_NE(said.find(why), std::string::npos) << said;
  }
  auto misconfigured = run({"--", "/bin/true"}, {{"MQX_DAEMON_CAPACITY", "abc"}}, true);
  EXPECT_EQ(misconfigured->wait(5s), 78) << "a configuration error must not look like a query's exit 1";
}

// After --timeout (and on a forwarded signal) every process of the query
// goes, not only mqx-run's child: the query runs in its own process group.
TEST_F(HostileUser, TheTimeoutStopsEveryProcessOfTheQuery) {
  startDaemon();
  // A running query that holds the node: the next one is not admitted.
  auto holder = run(
      {"--plan", plan("holder", 24), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", "echo holding; exec sleep 30"});
  ASSERT_TRUE(holder->waitForLine("holding", 10s));
  auto query = run({"--timeout", "1", "--start-before-admission", "--plan", plan("grandchildren", 16), "--", "/bin/sh",
                    "-c", "sleep 1000 & echo $!; wait"});
  const auto line = query->waitForLineContaining("", 5s);
  ASSERT_TRUE(line.has_value());
  const pid_t grandchild = static_cast<pid_t>(std::stol(*line));
  EXPECT_EQ(query->wait(15s), 75);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !ipc::processAlive(grandchild);
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone) << "the query's own child (pid " << grandchild << ") outlived mqx-run's timeout";
  if (!gone) kill(grandchild, SIGKILL);
  holder->signal(SIGTERM);
  EXPECT_EQ(holder->wait(10s), 128 + SIGTERM);
}

// The system's POSIX queues used up (EMFILE, ENOSPC from mq_open: 256 queues
// by default, RLIMIT_MSGQUEUE per user): a process that cannot make its
// queues says so in one line, at once, and leaves nothing on the node.
TEST_F(HostileUser, UsedUpQueuesAreAClearErrorNotAHang) {
  startDaemon();
  ChildProcess starved(
      {"/usr/bin/prlimit", "--msgqueue=0:0", HOLD_CLIENT_PATH, "hold-budget", std::to_string(1 << 20), "0"},
      environment_, true);
  const auto status = starved.wait(10s);
  ASSERT_TRUE(status.has_value()) << "a client without queues hung";
  EXPECT_NE(*status, 0);
  const std::string said = starved.readRest(1s);
  EXPECT_NE(said.find("POSIX queues are used up"), std::string::npos) << said;
  EXPECT_EQ(usedBytes(), 0u);
}

// --- mqxd: signals and floods ---------------------------------------------------------

TEST_F(HostileUser, StraySignalsLeaveMqxdRunningAndSigquitIsACleanExit) {
  startDaemon();
  const ipc::IpcNames node = names();
  for (int stray : {SIGUSR1, SIGUSR2, SIGALRM}) {
    daemon_->signal(stray);
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(ipc::processAlive(daemon_->pid())) << "mqxd died of " << sigabbrev_np(stray);
  }
  segment_.reset();
  daemon_->signal(SIGQUIT);
  EXPECT_EQ(daemon_->wait(5s), 0);
  daemon_.reset();
  EXPECT_EQ(ownerOfSegment(node.segment), static_cast<uid_t>(-1)) << "SIGQUIT left the segment";
  EXPECT_EQ(ownerOfQueue(node.daemonQueue), static_cast<uid_t>(-1)) << "SIGQUIT left the queue";
}

TEST_F(HostileUser, AFloodOfLaunchRequestsForAMissingDeviceIsLoggedAtMostOnceASecond) {
  startDaemon(true);
  ipc::Message message = ipc::Message::of(ipc::MessageKind::LaunchTuningRequest, getpid(), ipc::kNoSlot);
  message.launch.nodeDevice = 99;
  int sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (sent < 3000 && std::chrono::steady_clock::now() < deadline) {
    if (ipc::sendTo(names().daemonQueue, message))
      ++sent;
    else
      std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(1200ms);
  ipc::sendTo(names().daemonQueue, message);
  const std::string log = daemon_->readRest(1500ms);
  std::size_t lines = 0;
  std::istringstream text(log);
  for (std::string line; std::getline(text, line);)
    lines += line.find("launch request of process") != std::string::npos ? 1 : 0;
  EXPECT_GE(lines, 2u) << log;
  EXPECT_LE(lines, 15u) << log;
  EXPECT_NE(log.find("more refused since the last line"), std::string::npos) << log;
  // The reply queue of this process is never created: mqxd's answers go nowhere.
}

} // namespace
} // namespace mqx::test
