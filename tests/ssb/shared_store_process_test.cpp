// The shared column store with real processes: an ssb-loader keeps the
// columns, a query program maps them (--shared) and gives the result of the
// file path, checked against the loader's reference results, its repeats
// identical; the loader stops on --stop and on SIGTERM and removes its store;
// a loader killed before it is ready, or none at all, leaves no hung query:
// the query's wait is bounded and its message names the store.
#include "ssb/common/error.hpp"
#include "ssb/common/shared_column_store.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace mqx::ssb {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process with stdout and stderr in files; killed if still running
// when the object goes.
class Child {
public:
  explicit Child(std::vector<std::string> argv) {
    static int counter = 0;
    std::string stem = "/tmp/mqx-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    out_ = stem + ".out";
    err_ = stem + ".err";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char*> args;
    for (std::string& arg : argv)
      args.push_back(arg.data());
    args.push_back(nullptr);
    int error = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) throw std::runtime_error("cannot start " + argv[0]);
  }
  ~Child() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(out_);
    std::filesystem::remove(err_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const { return readFile(out_); }
  std::string err() const { return readFile(err_); }

  // The exit status (128 + signal when killed), or -1 if still running
  // after `limit`.
  int wait(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (!exited_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else if (Clock::now() >= deadline) {
        return -1;
      } else {
        std::this_thread::sleep_for(10ms);
      }
    }
    return status_;
  }

  // Waits up to `limit` for `text` in stdout.
  bool waitForOutput(const std::string& text, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (out().find(text) == std::string::npos) {
      if (Clock::now() >= deadline || wait(0ms) != -1) return out().find(text) != std::string::npos;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string out_, err_;
};

// The result lines of a query program's output (those not starting "#").
std::string resultLines(const std::string& output) {
  std::istringstream in(output);
  std::string line, result;
  while (std::getline(in, line))
    if (!line.starts_with("#")) result += line + "\n";
  return result;
}

class SharedStoreProcessTest : public ::testing::Test {
protected:
  static std::string name(const std::string& what) { return "proc-" + what + "-" + std::to_string(::getpid()); }
  static std::string dataDir() { return test::generatedDataset(0.01, 1).dir.string(); }
  static std::vector<std::string> query(std::vector<std::string> args) {
    args.insert(args.begin(), MQX_SSB_TEST_QUERY_PROGRAM);
    args.insert(args.end(), {"--device", "sim"});
    return args;
  }
  void TearDown() override {
    // A store left by a killed loader.
    for (const char* what : {"serve", "killed", "term"})
      removeStore(name(what));
  }
  static void removeStore(const std::string& store) {
    std::filesystem::remove("/dev/shm/" + sharedStoreObjectName(store));
  }
};

TEST_F(SharedStoreProcessTest, QueryOnTheStoreEqualsTheFilePathAndLoaderStops) {
  Child loader({MQX_SSB_TEST_LOADER_PROGRAM, "--data", dataDir(), "--name", name("serve"), "--threads", "2"});
  ASSERT_TRUE(loader.waitForOutput(" ready: ", 60s)) << loader.out() << loader.err();
  EXPECT_NE(loader.out().find("store " + name("serve") + " ready: 50 columns"), std::string::npos) << loader.out();

  Child shared(query({"--shared", name("serve"), "--check", "--repeat", "3"}));
  ASSERT_EQ(shared.wait(60s), 0) << shared.out() << shared.err();
  Child files(query({"--data", dataDir(), "--check"}));
  ASSERT_EQ(files.wait(60s), 0) << files.out() << files.err();

  EXPECT_NE(shared.out().find("# check passed"), std::string::npos);
  EXPECT_NE(shared.out().find("reference from the shared store"), std::string::npos);
  EXPECT_NE(files.out().find("reference computed here"), std::string::npos);
  EXPECT_FALSE(resultLines(shared.out()).empty());
  EXPECT_EQ(resultLines(shared.out()), resultLines(files.out()));
  EXPECT_NE(shared.out().find("# run 3 total"), std::string::npos);
  EXPECT_NE(shared.out().find("\"repeat\": 3"), std::string::npos);
  EXPECT_NE(shared.out().find("\"columns\": \"shared\""), std::string::npos);
  EXPECT_NE(files.out().find("\"columns\": \"files\""), std::string::npos);

  Child stop({MQX_SSB_TEST_LOADER_PROGRAM, "--stop", "--name", name("serve")});
  EXPECT_EQ(stop.wait(10s), 0) << stop.err();
  EXPECT_EQ(loader.wait(10s), 0) << loader.err();
  EXPECT_NE(loader.out().find("asked to stop, removing it"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + sharedStoreObjectName(name("serve"))));
  Child again({MQX_SSB_TEST_LOADER_PROGRAM, "--stop", "--name", name("serve")});
  EXPECT_EQ(again.wait(10s), 1);
  EXPECT_NE(again.err().find("no shared column store named " + name("serve")), std::string::npos);
}

TEST_F(SharedStoreProcessTest, LoaderStopsOnSigterm) {
  Child loader({MQX_SSB_TEST_LOADER_PROGRAM, "--data", dataDir(), "--name", name("term"), "--no-reference"});
  ASSERT_TRUE(loader.waitForOutput(" ready: ", 60s)) << loader.err();
  ::kill(loader.pid(), SIGTERM);
  EXPECT_EQ(loader.wait(10s), 0) << loader.err();
  EXPECT_NE(loader.out().find("signal 15, removing it"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + sharedStoreObjectName(name("term"))));
}

TEST_F(SharedStoreProcessTest, KilledLoaderLeavesNoHungQuery) {
  // A loader that stays unpublished for a minute, killed while a query
  // waits for it: the query must give up at once with a message, not after
  // its 30 s wait.
  Child loader({MQX_SSB_TEST_LOADER_PROGRAM, "--data", dataDir(), "--name", name("killed"), "--no-reference",
                "--publish-delay-ms", "60000"});
  const auto object = "/dev/shm/" + sharedStoreObjectName(name("killed"));
  auto deadline = Clock::now() + 60s;
  while (!std::filesystem::exists(object) && Clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(std::filesystem::exists(object)) << loader.err();
  Child waiting(query({"--shared", name("killed"), "--shared-wait-ms", "30000", "--check"}));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(waiting.wait(0ms), -1) << "the query should still wait: " << waiting.err();
  auto killed = Clock::now();
  ::kill(loader.pid(), SIGKILL);
  EXPECT_EQ(loader.wait(10s), 128 + SIGKILL);
  EXPECT_EQ(waiting.wait(10s), 2) << waiting.out() << waiting.err();
  EXPECT_LT(Clock::now() - killed, 10s);
  EXPECT_NE(waiting.err().find("shared column store " + name("killed") + ": its loader (pid " +
                               std::to_string(loader.pid()) + ") is gone before the store was ready"),
            std::string::npos)
      << waiting.err();
}

TEST_F(SharedStoreProcessTest, NoLoaderIsABoundedWaitWithAMessage) {
  auto start = Clock::now();
  Child waiting(query({"--shared", name("absent"), "--shared-wait-ms", "500"}));
  EXPECT_EQ(waiting.wait(20s), 2) << waiting.err();
  EXPECT_GE(Clock::now() - start, 500ms);
  EXPECT_NE(waiting.err().find("shared column store " + name("absent") + " not ready: waited 500 ms for it to exist"),
            std::string::npos)
      << waiting.err();
}

TEST_F(SharedStoreProcessTest, BadCommandLinesNameTheOption) {
  Child noSource(query({"--check"}));
  EXPECT_EQ(noSource.wait(20s), 2);
  EXPECT_NE(noSource.err().find("--data DIR or --shared NAME is required"), std::string::npos);
  Child badWait(query({"--shared", "x", "--shared-wait-ms", "soon"}));
  EXPECT_EQ(badWait.wait(20s), 2);
  EXPECT_NE(badWait.err().find("--shared-wait-ms: expected milliseconds"), std::string::npos);
  Child both(query({"--data", dataDir(), "--fused", "--join-first"}));
  EXPECT_EQ(both.wait(20s), 2);
  EXPECT_NE(both.err().find("--fused and --join-first exclude each other"), std::string::npos);
  Child badName(query({"--shared", "a/b", "--shared-wait-ms", "0"}));
  EXPECT_EQ(badName.wait(20s), 2);
  EXPECT_NE(badName.err().find("shared column store name 'a/b'"), std::string::npos);
  Child loaderWithoutData({MQX_SSB_TEST_LOADER_PROGRAM, "--name", "x"});
  EXPECT_EQ(loaderWithoutData.wait(20s), 2);
  EXPECT_NE(loaderWithoutData.err().find("--data DIR is required"), std::string::npos);
  // A refused value and a missing one, in both programs: the whole line.
  Child badRepeat(query({"--data", dataDir(), "--repeat", "0"}));
  EXPECT_EQ(badRepeat.wait(20s), 2);
  EXPECT_NE(badRepeat.err().find("ssb-q2.1: --repeat: expected a positive count, got '0' (try --help)\n"),
            std::string::npos)
      << badRepeat.err();
  Child noData({MQX_SSB_TEST_QUERY_PROGRAM, "--check", "--data"}); // query() would add a value
  EXPECT_EQ(noData.wait(20s), 2);
  EXPECT_NE(noData.err().find("ssb-q2.1: --data needs a value (try --help)\n"), std::string::npos) << noData.err();
  Child loaderBadThreads({MQX_SSB_TEST_LOADER_PROGRAM, "--name", "x", "--threads", "x"});
  EXPECT_EQ(loaderBadThreads.wait(20s), 2);
  EXPECT_NE(
      loaderBadThreads.err().find("ssb-loader: --threads: expected an integer of at least 1, got 'x' (try --help)\n"),
      std::string::npos)
      << loaderBadThreads.err();
  Child loaderNoName({MQX_SSB_TEST_LOADER_PROGRAM, "--data", dataDir(), "--name"});
  EXPECT_EQ(loaderNoName.wait(20s), 2);
  EXPECT_NE(loaderNoName.err().find("ssb-loader: --name needs a value (try --help)\n"), std::string::npos)
      << loaderNoName.err();
}

} // namespace
} // namespace mqx::ssb
