// Demand updates end to end (paper §5: a running query's weighted demand is
// updated as it executes): the advice path (a program calling
// mqx_declare_operator under mqx-run with libmqx.so preloaded) and the
// observed path (a sim memory client's launches under mqx-run). Both
// through real processes and mqxd's record of the query.
#include <fstream>
#include <sstream>

#include "node_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

struct QueryRecord {
  ipc::ClientState state = ipc::ClientState::Free;
  std::uint64_t weightedDemand = 0;
  std::uint64_t peakDemand = 0;
};

class Demand : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
#ifdef LIBMQX_PATH
    environment_["MQX_LIBRARY"] = LIBMQX_PATH;
#endif
#ifdef FAKE_DRIVER_DIR
    environment_["LD_LIBRARY_PATH"] = FAKE_DRIVER_DIR;
#endif
  }
  void TearDown() override {
    for (const auto& path : files_)
      std::remove(path.c_str());
    NodeFixture::TearDown();
  }

  // A plan file of one operator of `mib` MiB.
  std::string plan(const std::string& name, std::uint64_t mib) {
    const std::string path = "/tmp/mqx-plan-" + instance_ + "-" + name;
    std::ofstream(path) << "name = \"" << name << "\"\n[[operator]]\ntime = 1.0\nmemory = \"" << mib << "MiB\"\n";
    files_.push_back(path);
    return path;
  }
  // The query record named `name` (Waiting or Running), if there is one.
  std::optional<QueryRecord> record(const std::string& name) {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& client : segment_->state().clients)
      if ((client.state == ipc::ClientState::Waiting || client.state == ipc::ClientState::Running) &&
          name == client.name)
        return QueryRecord{client.state, client.weightedDemand, client.peakDemand};
    return std::nullopt;
  }
  // Polls until the record satisfies `wanted`; the last one seen.
  template <typename Predicate>
  std::optional<QueryRecord> waitForRecord(const std::string& name, Predicate wanted,
                                           std::chrono::milliseconds timeout = 3s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::optional<QueryRecord> seen;
    while (std::chrono::steady_clock::now() < deadline) {
      seen = record(name);
      if (seen && wanted(*seen)) return seen;
      std::this_thread::sleep_for(2ms);
    }
    return seen;
  }
  std::unique_ptr<ChildProcess> declaring(const std::string& name, const std::vector<std::string>& steps,
                                          const std::string& holdMs) {
    std::vector<std::string> args{"--name", name, "--", DECLARE_OPERATORS_PATH, holdMs};
    args.insert(args.end(), steps.begin(), steps.end());
    return run(args);
  }
  // A query that only sleeps, with a plan of `mib` MiB.
  std::unique_ptr<ChildProcess> sleeper(const std::string& name, std::uint64_t mib) {
    return run({"--name", name, "--plan", plan(name, mib), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                "echo started; sleep 0.05"});
  }
  static std::string operatorOf(double seconds, std::uint64_t mib) {
    return std::to_string(seconds) + ":" + std::to_string(mib * kMiB);
  }

  std::vector<std::string> files_;
};

TEST_F(Demand, DeclaredOperatorsGiveTheQueryTheirWeightedDemand) {
  startDaemon();
  // m = Σ tᵢmᵢ / Σ tᵢ: (2*30 + 1*60) / 3 = 40 MiB, peak 60; then with
  // (6 s, 10 MiB): (60 + 60 + 60) / 9 = 20 MiB, peak still 60.
  auto query = declaring("declarer", {operatorOf(2, 30), operatorOf(1, 60), "wait", operatorOf(6, 10), "wait"}, "800");
  ASSERT_TRUE(query->waitForLine("waiting", 10s));
  // Each declaration is one message: the first alone (30 MiB) may be seen
  // before the second arrives.
  auto first = waitForRecord("declarer", [](const QueryRecord& r) { return r.weightedDemand == 40 * kMiB; });
  ASSERT_TRUE(first.has_value()) << "no record for the query";
  EXPECT_EQ(first->state, ipc::ClientState::Running);
  EXPECT_EQ(first->weightedDemand, 40 * kMiB) << "libmqx's mqx_node_declare_operator reached mqxd";
  EXPECT_EQ(first->peakDemand, 60 * kMiB);
  ASSERT_TRUE(query->waitForLine("waiting", 5s));
  auto second = waitForRecord("declarer", [](const QueryRecord& r) { return r.weightedDemand == 20 * kMiB; });
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->weightedDemand, 20 * kMiB);
  EXPECT_EQ(second->peakDemand, 60 * kMiB);
  EXPECT_TRUE(query->waitForLine("done", 5s));
  EXPECT_EQ(query->wait(5s), 0);
}

TEST_F(Demand, InvalidDeclaredOperatorIsRefusedAndChangesNothing) {
  startDaemon();
  auto query = declaring("declarer", {operatorOf(1, 30), "wait", "-1:1000", "nan:5", "wait"}, "400");
  ASSERT_TRUE(query->waitForLine("declared", 10s));
  EXPECT_TRUE(query->waitForLine("refused", 5s)) << "negative time";
  EXPECT_TRUE(query->waitForLine("refused", 5s)) << "NaN time";
  auto seen = waitForRecord("declarer", [](const QueryRecord& r) { return r.weightedDemand != 0; });
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->weightedDemand, 30 * kMiB);
  EXPECT_EQ(query->wait(5s), 0);
}

TEST_F(Demand, PostponedQueryIsAdmittedWhenTheDeclaredDemandDrops) {
  startDaemon();
  // a: 80 MiB declared; b (50 MiB) must wait. Then a declares a long small
  // operator: (1*80 + 3*20) / 4 = 35 MiB, and b fits beside it while a runs.
  auto a = declaring("a", {operatorOf(1, 80), "wait", operatorOf(3, 20), "wait"}, "1000");
  ASSERT_TRUE(a->waitForLine("waiting", 10s));
  ASSERT_TRUE(waitForRecord("a", [](const QueryRecord& r) { return r.weightedDemand == 80 * kMiB; }));
  auto b = sleeper("b", 50);
  ASSERT_TRUE(waitForRecord("b", [](const QueryRecord&) { return true; }));
  std::this_thread::sleep_for(300ms);
  auto postponed = record("b");
  ASSERT_TRUE(postponed.has_value());
  EXPECT_EQ(postponed->state, ipc::ClientState::Waiting) << "80 + 50 MiB exceed the 100 MiB node";
  ASSERT_TRUE(a->waitForLine("waiting", 5s)) << "a declared its small operator";
  EXPECT_TRUE(b->waitForLine("started", 2s)) << "admitted after a's demand dropped to 35 MiB";
  EXPECT_EQ(b->wait(5s), 0);
  EXPECT_EQ(a->wait(1ms), std::nullopt) << "a still runs: b did not wait for its end";
  auto dropped = record("a");
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->weightedDemand, 35 * kMiB);
  EXPECT_EQ(a->wait(10s), 0);
}

// A query of several processes: each reports its own demand, and the
// query's is their sum (they hold memory at once), not the last report.
TEST_F(Demand, ProcessesOfOneQueryAddTheirDemands) {
  startDaemon();
  const std::string client = SIM_CLIENT_PATH;
  const auto mib = [](std::uint64_t n) { return std::to_string(n * kMiB); };
  const std::string script = client + " update-demand " + mib(20) + " " + mib(30) + " 0 1500 & " + client +
                             " update-demand " + mib(15) + " " + mib(25) + " 300 1200 & wait";
  auto query =
      run({"--name", "pair", "--plan", plan("pair", 10), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c", script});
  ASSERT_TRUE(query->waitForLine("updated", 10s));
  auto one = waitForRecord("pair", [](const QueryRecord& r) { return r.weightedDemand == 20 * kMiB; });
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->weightedDemand, 20 * kMiB) << "the first process's report replaces the plan";
  EXPECT_EQ(one->peakDemand, 30 * kMiB);
  ASSERT_TRUE(query->waitForLine("updated", 5s));
  auto both = waitForRecord("pair", [](const QueryRecord& r) { return r.weightedDemand == 35 * kMiB; });
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->weightedDemand, 35 * kMiB) << "20 + 15 MiB: the second report adds to the first";
  EXPECT_EQ(both->peakDemand, 55 * kMiB);
  EXPECT_EQ(query->wait(10s), 0);
}

// A declared plan is the query's demand while it runs: what its kernels
// reference (launch footprints) says nothing of what it keeps resident
// between them (daemon/declared_demand.hpp: on the H200 the SSB queries'
// footprints were 2.94 GB where they declared 3.70 GB, and Weight
// over-admitted by the difference).
TEST_F(Demand, LaunchesDoNotLowerADeclaredPlan) {
  startDaemon();
  // a's plan says 80 MiB; its kernels reference one 4 MiB region for 2.5 s,
  // reported every 300 ms. b (50 MiB) must wait for a's end.
  environment_["MQX_DAEMON_DEMAND_REPORT_INTERVAL_MS"] = "300";
  auto a = run({"--name", "a", "--plan", plan("a", 80), "--", SIM_CLIENT_PATH, "footprints", "10", "200",
                std::to_string(4 * kMiB) + ":2500"});
  ASSERT_TRUE(a->waitForLine("phase 1", 10s));
  ASSERT_TRUE(waitForRecord("a", [](const QueryRecord&) { return true; }));
  auto b = sleeper("b", 50);
  ASSERT_TRUE(waitForRecord("b", [](const QueryRecord&) { return true; }));
  // Five report intervals: a's process has sent its 4 MiB footprint by then.
  auto lowered = waitForRecord(
      "a", [](const QueryRecord& r) { return r.weightedDemand != 80 * kMiB; }, 1500ms);
  ASSERT_TRUE(lowered.has_value());
  EXPECT_EQ(lowered->weightedDemand, 80 * kMiB) << "a footprint replaced the declared plan";
  EXPECT_EQ(lowered->peakDemand, 80 * kMiB);
  auto postponed = record("b");
  ASSERT_TRUE(postponed.has_value());
  EXPECT_EQ(postponed->state, ipc::ClientState::Waiting) << "80 + 50 MiB exceed the 100 MiB node";
  EXPECT_TRUE(a->waitForLine("finished", 10s));
  EXPECT_EQ(b->wait(1ms), std::nullopt) << "b ended before a's kernels did";
  EXPECT_EQ(a->wait(10s), 0);
  EXPECT_EQ(b->wait(10s), 0);
}

// A demand mqxd learned from an earlier run is not a declaration: the
// query's launches lower it as it runs (paper §5), and a query that would
// not fit beside the learned figure starts beside the observed one.
TEST_F(Demand, LaunchesLowerALearnedDemand) {
  startDaemon();
  environment_["MQX_DAEMON_DEMAND_REPORT_INTERVAL_MS"] = "300";
  // First run of a, no plan: its process holds 80 MiB; mqxd learns 80 MiB.
  auto first = run({"--name", "a", "--", SIM_CLIENT_PATH, "hold-budget", std::to_string(80 * kMiB), "300"});
  ASSERT_EQ(first->wait(10s), 0);
  std::this_thread::sleep_for(300ms); // mqxd handles QueryFinished
  {
    std::ifstream history("/tmp/mqx-test-demand-" + instance_);
    std::stringstream text;
    text << history.rdbuf();
    ASSERT_EQ(text.str(), "a " + std::to_string(80 * kMiB) + "\n") << "mqxd did not learn a's 80 MiB";
  }
  auto a = run({"--name", "a", "--", SIM_CLIENT_PATH, "footprints", "10", "200", std::to_string(4 * kMiB) + ":3000"});
  ASSERT_TRUE(a->waitForLine("phase 1", 10s));
  auto b = sleeper("b", 50);
  auto lowered = waitForRecord("a", [](const QueryRecord& r) {
    return r.state == ipc::ClientState::Running && r.weightedDemand != 0 && r.weightedDemand < 80 * kMiB;
  });
  ASSERT_TRUE(lowered.has_value());
  EXPECT_EQ(lowered->weightedDemand, 4 * kMiB) << "the weighted demand is what its kernels reference";
  EXPECT_TRUE(b->waitForLine("started", 2s)) << "admitted once a's demand was observed";
  EXPECT_EQ(b->wait(5s), 0);
  EXPECT_EQ(a->wait(1ms), std::nullopt) << "a still runs: b did not wait for its end";
  EXPECT_EQ(a->wait(10s), 0);
}

TEST_F(Demand, ObservedDemandIsTheTimeWeightedMeanNotThePeakOfThePhase) {
  startDaemon();
  // 200 ms of kernels over 40 MiB, then 1800 ms over 4 MiB: m = Σ tᵢmᵢ / Σ
  // tᵢ is about (0.2*40 + 1.8*4) / 2 = 7.6 MiB, the peak 40 MiB. The demand
  // reported at the end is neither the last phase's 4 MiB nor the peak.
  auto a = run({"--name", "a", "--", SIM_CLIENT_PATH, "footprints", "5", "1000", std::to_string(40 * kMiB) + ":200",
                std::to_string(4 * kMiB) + ":1800"});
  ASSERT_TRUE(a->waitForLine("phase 2", 10s));
  auto peak = waitForRecord("a", [](const QueryRecord& r) { return r.peakDemand == 40 * kMiB; });
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->peakDemand, 40 * kMiB);
  ASSERT_TRUE(a->waitForLine("finished", 10s));
  std::this_thread::sleep_for(200ms); // the last report reaches mqxd
  auto end = record("a");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->peakDemand, 40 * kMiB);
  EXPECT_GT(end->weightedDemand, 5 * kMiB) << "not the last phase's 4 MiB";
  EXPECT_LT(end->weightedDemand, 12 * kMiB) << "not the 40 MiB peak";
  EXPECT_EQ(a->wait(10s), 0);
}

TEST_F(Demand, AdviceApiWithoutDaemonIsANoOp) {
  // No mqxd: mqx-run runs the query alone; the declaration succeeds and
  // changes nothing (the program exits 0).
  auto query = run({"--allow-no-daemon", "--", DECLARE_OPERATORS_PATH, "0", operatorOf(1, 10)});
  EXPECT_TRUE(query->waitForLine("declared", 10s));
  EXPECT_EQ(query->wait(10s), 0);
}

} // namespace
} // namespace mqx::test
