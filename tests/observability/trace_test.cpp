// The trace recorder end to end: mqxd and sim query processes under mqx-run
// with trace.file set; their files must merge into valid Chrome trace JSON
// with properly nested spans (tools/merge-traces --check) and hold what the
// run did (check_trace.py). Tracing off leaves no file.
#include <dirent.h>
#include <filesystem>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "node_fixture.hpp"

namespace mqx::test {
namespace {

class Trace : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    folder_ = "/tmp/mqx-trace-test-" + instance_;
    mkdir(folder_.c_str(), 0700);
  }
  void TearDown() override {
    NodeFixture::TearDown();
    std::error_code ignored; // a folder left in /tmp is no test failure
    std::filesystem::remove_all(folder_, ignored);
  }
  // A plan of operators (time, MiB): weighted demand = sum(t*m) / sum(t).
  std::string plan(const std::string& name, const std::vector<std::pair<double, int>>& operators) {
    const std::string path = folder_ + "/" + name + ".plan";
    std::ofstream out(path);
    out << "name = \"" << name << "\"\n";
    for (const auto& [time, mebibytes] : operators)
      out << "[[operator]]\ntime = " << std::fixed << time << "\nmemory = \"" << mebibytes << "MiB\"\n";
    return path;
  }
  int filesIn(const std::string& folder) {
    int count = 0;
    if (DIR* dir = opendir(folder.c_str())) {
      while (dirent* entry = readdir(dir))
        count += std::string(entry->d_name).ends_with(".json") ? 1 : 0;
      closedir(dir);
    }
    return count;
  }
  std::string folder_;
};

TEST_F(Trace, TwoQueriesWithEvictionGiveAValidMergedTrace) {
  environment_["MQX_TRACE_FILE"] = folder_ + "/trace-%p.json";
  startDaemon();
  // a and b fit together by weighted demand (12 + 12 of 32 MiB) but each
  // uses 24 MiB: they evict each other's regions. c (20 MiB) waits for them.
  // PEERS 5: a and b start their passes only once c's mqx-run has joined
  // too (after the two mqx-run records of a and b and their two clients), so
  // c always arrives while both run and is postponed, however fast they are.
  const std::string bytes = std::to_string(4 << 20);
  auto a = run({"--plan", plan("a", {{2.0, 6}, {1.0, 24}}), "--", SIM_CLIENT_PATH, "work", "6", bytes, "3", "7", "5"});
  auto b = run({"--plan", plan("b", {{2.0, 6}, {1.0, 24}}), "--", SIM_CLIENT_PATH, "work", "6", bytes, "3", "9", "5"});
  std::this_thread::sleep_for(200ms); // a and b ask for admission first
  auto c = run({"--plan", plan("c", {{1.0, 20}}), "--", SIM_CLIENT_PATH, "work", "2", bytes, "1", "11"});
  EXPECT_EQ(a->wait(60s), 0);
  EXPECT_EQ(b->wait(60s), 0);
  EXPECT_EQ(c->wait(60s), 0);
  stopDaemon(); // mqxd's trace is complete once it exits
  const std::string merged = folder_ + "/merged.json";
  const std::string merge = std::string(PYTHON_PATH) + " " + MERGE_TRACES_PATH +
                            " --check --require transfer,eviction,launch,residency,admission -o " + merged + " " +
                            folder_;
  ASSERT_EQ(std::system(merge.c_str()), 0) << merge;
  const std::string check = std::string(PYTHON_PATH) + " " + CHECK_TRACE_PATH + " " + merged + " 3";
  EXPECT_EQ(std::system(check.c_str()), 0) << check;
}

TEST_F(Trace, OffWritesNothing) {
  environment_["MQX_TRACE_FILE"] = "";
  startDaemon();
  auto a = client({"work", "2", std::to_string(1 << 20), "1", "3"});
  EXPECT_EQ(a->wait(30s), 0);
  stopDaemon();
  EXPECT_EQ(filesIn(folder_), 0);
}

TEST_F(Trace, AKilledProcessLeavesARepairableTrace) {
  environment_["MQX_TRACE_FILE"] = folder_ + "/trace-%p.json";
  environment_["MQX_TRACE_BUFFER_EVENTS"] = "1"; // every event written at once
  startDaemon();
  auto holder = client({"cold", std::to_string(4 << 20), "10000", "5"});
  ASSERT_TRUE(holder->waitForLine("ready", 10s));
  holder->signal(SIGKILL);
  holder->wait(5s);
  stopDaemon();
  const std::string merge = std::string(PYTHON_PATH) + " " + MERGE_TRACES_PATH + " --check --require launch -o " +
                            folder_ + "/m.json " + folder_ + "/trace-" + std::to_string(holder->pid()) + ".json";
  EXPECT_EQ(std::system(merge.c_str()), 0) << merge;
}

} // namespace
} // namespace mqx::test
