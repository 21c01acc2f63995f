// SSB soak (issue 13): the main job again and again. Each round starts a
// real mqxd with a node budget and an empty demand state (so admission lets
// all 13 queries in at once, as on a query's first run: the hardest case for
// memory), runs the 13 SSB query programs at once, each under mqx-run on the
// simulated device and checked exactly against the CPU reference, and
// requires every one to pass: a query whose kernels fit the node must never
// fail for lack of memory (docs/daemon.md, "Queue or evict, never abort").
//
//   SsbSoak.ThirteenQueriesAtOnceNeverFail       CI (label soak): 15 rounds, at 256, 160 and 96 MiB in turn
//   SsbSoak.Long                                 label soak-long, skipped unless MQX_SOAK_LONG=1:
//                                                MQX_SOAK_ROUNDS rounds (default 30) over the three
//                                                budgets; MQX_SOAK_RESULTS=FILE writes the rounds'
//                                                failures and wall times as JSON
//
// The data directory comes in MQX_SSB_SOAK_DATA (ctest: the ssb_pipeline
// fixture's SF 1 data). Every wait is bounded: a round that runs past its
// bound kills its processes and fails.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/node_state.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<std::string> kQueries = {"q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1",
                                           "q3.2", "q3.3", "q3.4", "q4.1", "q4.2", "q4.3"};

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lastLines(const std::string& text, int count) {
  std::size_t at = text.size();
  for (int i = 0; i <= count && at != std::string::npos && at > 0; ++i)
    at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

// A single-quoted shell word.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A program whose stdout and stderr go to `log` (13 queries' output never
// fills a pipe nobody reads).
std::unique_ptr<ChildProcess> startLogged(const std::vector<std::string>& argv, const fs::path& log,
                                          const std::map<std::string, std::string>& environment) {
  std::string command = "exec";
  for (const auto& word : argv)
    command += " " + quoted(word);
  command += " >" + quoted(log.string()) + " 2>&1";
  return std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sh", "-c", command}, environment);
}

struct RoundResult {
  std::string budget;
  std::string evictionTimeout; // daemon.eviction_timeout_ms
  int round = 0;
  double wallSeconds = 0;
  int failures = 0;
  std::vector<std::string> failed; // "q4.3 (exit 1): last lines"
  std::uint64_t crossProcessEvictions = 0;
};

// One round: mqxd with `budget`, the 13 queries at once, each checked.
RoundResult runRound(const std::string& budget, const std::string& evictionTimeout, int round, const fs::path& data,
                     const fs::path& work, std::chrono::seconds bound) {
  RoundResult result;
  result.budget = budget;
  result.evictionTimeout = evictionTimeout;
  result.round = round;
  static int counter = 0;
  const std::string instance = "soak" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  const fs::path logs = work / instance;
  fs::create_directories(logs);
  const std::map<std::string, std::string> environment = {
      {"MQX_DAEMON_INSTANCE", instance},
      {"MQX_DAEMON_CAPACITY", budget},
      {"MQX_DAEMON_ADMISSION", "weight"},
      {"MQX_DAEMON_EVICTION_TIMEOUT_MS", evictionTimeout},
      {"MQX_DAEMON_DEMAND_STATE_FILE", (logs / "demand").string()}, // empty: all 13 admitted at once
      {"MQX_BACKEND_KIND", "sim"},
      {"MQX_LOG_LEVEL", "warn"}};
  auto daemonEnvironment = environment;
  daemonEnvironment["MQX_LOG_LEVEL"] = "info"; // its shutdown line counts the cross-process evictions
  auto daemon = startLogged({MQXD_PATH}, logs / "mqxd.log", daemonEnvironment);
  const auto ready = std::chrono::steady_clock::now() + 10s;
  const std::string segment = ipc::IpcNames::forInstance(instance, getuid()).segment;
  while (readFile(logs / "mqxd.log").find("mqxd: ready (" + segment + ")") == std::string::npos) {
    if (std::chrono::steady_clock::now() > ready) {
      ADD_FAILURE() << "mqxd did not start: " << readFile(logs / "mqxd.log");
      result.failures = static_cast<int>(kQueries.size());
      return result;
    }
    std::this_thread::sleep_for(20ms);
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<ChildProcess>> queries;
  for (const auto& query : kQueries)
    queries.push_back(startLogged({MQX_RUN_PATH, "--stats", "--name", query, "--", SSB_QUERY_DIR "/ssb-" + query,
                                   "--data", data.string(), "--check", "--device", "sim"},
                                  logs / (query + ".log"), environment));
  const auto deadline = start + bound;
  for (std::size_t i = 0; i < kQueries.size(); ++i) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto status = queries[i]->wait(std::max(left, std::chrono::milliseconds(1)));
    const std::string log = readFile(logs / (kQueries[i] + ".log"));
    const bool passed = status == 0 && log.find("# check passed") != std::string::npos;
    if (passed) continue;
    ++result.failures;
    result.failed.push_back(kQueries[i] + (status ? " (exit " + std::to_string(*status) + ")" : " (over the bound)") +
                            ":\n" + lastLines(log, 8));
  }
  result.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  queries.clear(); // kills what still runs (over the bound)
  daemon->signal(SIGTERM);
  EXPECT_EQ(daemon->wait(10s), 0) << "mqxd did not stop cleanly";
  const std::string daemonLog = readFile(logs / "mqxd.log");
  if (const auto at = daemonLog.find("shutting down; "); at != std::string::npos)
    result.crossProcessEvictions = std::strtoull(daemonLog.c_str() + at + 15, nullptr, 10);
  if (result.failures == 0) fs::remove_all(logs); // kept for a failed round
  return result;
}

fs::path dataDirectory() {
  const char* data = std::getenv("MQX_SSB_SOAK_DATA");
  return data != nullptr ? fs::path(data) : fs::path();
}

std::string commitOfSources() {
  std::string commit;
  if (FILE* pipe = popen("git -C " MQX_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", "r")) {
    char buffer[64] = {};
    if (std::fgets(buffer, sizeof buffer, pipe) != nullptr) commit = buffer;
    pclose(pipe);
  }
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r'))
    commit.pop_back();
  return commit.empty() ? "unknown" : commit;
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// Runs `rounds` rounds, cycling through `budgets`, and after each cycle
// through the eviction timeouts: the default 2000 ms, and 250 ms, where the
// former fixed deadlines (1 s) failed 8-9 of the 13 queries in every round at
// 96 MiB (docs/daemon.md); a wait now gives up only when the node makes no
// progress for 4 x the timeout, which a running node never does. Prints one
// line per round.
std::vector<RoundResult> soak(const std::vector<std::string>& budgets, int rounds, std::chrono::seconds roundBound) {
  const std::vector<std::string> evictionTimeouts = {"2000", "250"};
  const fs::path data = dataDirectory();
  const fs::path work = fs::temp_directory_path() / ("mqx-ssb-soak-" + std::to_string(getpid()));
  std::vector<RoundResult> results;
  for (int round = 0; round < rounds; ++round) {
    const std::string& budget = budgets[round % budgets.size()];
    const std::string& timeout = evictionTimeouts[(round / budgets.size()) % evictionTimeouts.size()];
    results.push_back(runRound(budget, timeout, round + 1, data, work, roundBound));
    const RoundResult& result = results.back();
    std::printf("soak round %d: budget %s, eviction timeout %s ms, %zu queries, %d failed, wall %.1f s, %llu "
                "cross-process evictions\n",
                result.round, budget.c_str(), timeout.c_str(), kQueries.size(), result.failures, result.wallSeconds,
                static_cast<unsigned long long>(result.crossProcessEvictions));
    for (const auto& failed : result.failed)
      std::printf("  FAILED %s\n", failed.c_str());
    std::fflush(stdout);
  }
  std::error_code ignored;
  if (std::all_of(results.begin(), results.end(), [](const RoundResult& r) { return r.failures == 0; }))
    fs::remove_all(work, ignored);
  else
    std::printf("logs of the failed rounds: %s\n", work.c_str());
  return results;
}

void writeResults(const fs::path& path, const std::vector<RoundResult>& results, double totalSeconds) {
  int failures = 0;
  nlohmann::ordered_json perRound = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    failures += r.failures;
    perRound.push_back({{"round", r.round},
                        {"budget", r.budget},
                        {"eviction_timeout_ms", std::stoi(r.evictionTimeout)},
                        {"failed", r.failures},
                        {"wall_s", std::round(r.wallSeconds * 1e3) / 1e3},
                        {"cross_process_evictions", r.crossProcessEvictions}});
  }
  const nlohmann::ordered_json document = {
      {"what", "SSB soak: the 13 queries at once under mqxd on the simulated device, every result checked "
               "(tests/faults/ssb_soak_test.cpp, SsbSoak.Long)"},
      {"date", utcNow()},
      {"commit", commitOfSources()},
      {"host_cpus", std::thread::hardware_concurrency()},
      {"data", dataDirectory().filename().string()},
      {"rounds", results.size()},
      {"queries_per_round", kQueries.size()},
      {"failed_queries", failures},
      {"total_seconds", std::round(totalSeconds * 1e3) / 1e3},
      {"per_round", std::move(perRound)}};
  std::ofstream(path) << document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

class SsbSoak : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fs::exists(dataDirectory() / "manifest.json"))
      GTEST_SKIP() << "no SSB data in MQX_SSB_SOAK_DATA (ctest sets it: the ssb_pipeline.datagen fixture)";
  }
};

// CI: five rounds at each of the three budgets of issue 13 (about 75 s on
// the 2-core dev box at SF 1; a round takes 4-15 s). The rounds must evict
// across processes, or they test nothing.
TEST_F(SsbSoak, ThirteenQueriesAtOnceNeverFail) {
  const auto results = soak({"256MiB", "160MiB", "96MiB"}, 15, 150s);
  std::uint64_t crossProcess = 0;
  for (const auto& result : results) {
    EXPECT_EQ(result.failures, 0) << "round " << result.round << " at " << result.budget;
    crossProcess += result.crossProcessEvictions;
  }
  EXPECT_GT(crossProcess, 0u) << "no process evicted for another: the budgets no longer make the queries contend";
}

TEST_F(SsbSoak, Long) {
  if (std::getenv("MQX_SOAK_LONG") == nullptr || std::string(std::getenv("MQX_SOAK_LONG")) != "1")
    GTEST_SKIP() << "the long soak runs with MQX_SOAK_LONG=1 (ctest -L soak-long)";
  const char* roundsText = std::getenv("MQX_SOAK_ROUNDS");
  const int rounds = roundsText != nullptr ? std::max(1, std::atoi(roundsText)) : 30;
  const auto start = std::chrono::steady_clock::now();
  const auto results = soak({"256MiB", "160MiB", "96MiB"}, rounds, 300s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (const char* path = std::getenv("MQX_SOAK_RESULTS"); path != nullptr && *path != '\0') {
    writeResults(path, results, seconds);
    std::printf("results: %s\n", path);
  }
  int failures = 0;
  for (const auto& result : results)
    failures += result.failures;
  EXPECT_EQ(failures, 0) << "queries failed over " << results.size() << " rounds";
}

} // namespace
} // namespace mqx::test
