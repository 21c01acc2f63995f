// Admission end to end: mqx-run processes with plans under Weight, Peak and
// FIX-n, and demand learned from an earlier run of the same query.
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/syscall.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "ipc/admission_client.hpp"
#include "ipc/message_queue.hpp"
#include "ipc/node_state.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

class Admission : public NodeFixture {
protected:
  std::string plan(const std::string& name, const std::string& weightedMiB, const std::string& peakMiB) {
    // Two operators: the peak for 1 time unit, the weighted part so that the
    // time-weighted mean is what the test wants (m = (1*peak + k*low)/(1+k)).
    const std::string path = "/tmp/mqx-plan-" + instance_ + "-" + name;
    std::ofstream file(path);
    file << "name = \"" << name << "\"\n[[operator]]\ntime = 1.0\nmemory = \"" << peakMiB
         << "MiB\"\n[[operator]]\ntime = 1000000.0\nmemory = \"" << weightedMiB << "MiB\"\n";
    plans_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& path : plans_)
      std::remove(path.c_str());
    std::remove(log_.c_str());
    NodeFixture::TearDown();
  }
  // A query that logs its start and end.
  std::unique_ptr<ChildProcess> query(const std::string& name, const std::vector<std::string>& options,
                                      const std::string& seconds = "0.8") {
    std::vector<std::string> args = options;
    if (std::find(args.begin(), args.end(), "--name") == args.end()) args.insert(args.end(), {"--name", name});
    args.insert(args.end(),
                {"--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                 "echo start " + name + " >> " + log_ + "; sleep " + seconds + "; echo end " + name + " >> " + log_});
    auto process = run(args);
    waitUntilArrived(name);
    return process;
  }
  // A query declared at `declaredMiB` whose process sends a new demand of
  // `demandMiB` (weighted and peak) after `beforeMs` and ends `afterMs` later
  // (AdmissionClient::updateDemand from a memory client of the query).
  std::unique_ptr<ChildProcess> updatingQuery(const std::string& name, const std::string& declaredMiB, int demandMiB,
                                              int beforeMs, int afterMs) {
    const std::string demand = std::to_string(demandMiB << 20);
    const std::string update = std::string(SIM_CLIENT_PATH) + " update-demand " + demand + " " + demand + " " +
                               std::to_string(beforeMs) + " " + std::to_string(afterMs);
    return run({"--name", name, "--plan", plan(name, declaredMiB, declaredMiB), "--", SIM_CLIENT_PATH, "gate",
                "/bin/sh", "-c",
                "echo start " + name + " >> " + log_ + "; " + update + " && echo end " + name + " >> " + log_});
  }
  // Arrival order is the start order: the next query starts once this one
  // has its record.
  void waitUntilArrived(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        ipc::RobustLock lock(segment_->state().lock);
        for (const auto& record : segment_->state().clients)
          if ((record.state == ipc::ClientState::Waiting || record.state == ipc::ClientState::Running) &&
              name == record.name)
            return;
      }
      std::this_thread::sleep_for(1ms);
    }
    ADD_FAILURE() << "query " << name << " never arrived";
  }
  // Waits for every query to succeed; returns the log, which must then hold
  // each one's start and end.
  std::vector<std::string> eventsAfter(std::initializer_list<ChildProcess*> queries) {
    for (auto* q : queries)
      EXPECT_EQ(q->wait(20s), 0);
    auto lines = events();
    EXPECT_EQ(lines.size(), 2 * queries.size());
    return lines;
  }
  // Waits for `line` in the log; false after `timeout`.
  bool waitForEvent(const std::string& line, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto lines = events();
      if (std::find(lines.begin(), lines.end(), line) != lines.end()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  // Stops mqxd (SIGSTOP) where it waits for a message, so that it resumes
  // by taking the first queued one: not inside a pass, not holding the
  // node's lock. False if it was never seen there within 5 s.
  bool stopDaemonWaitingForMessages() {
    const pid_t pid = daemon_->pid();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      daemon_->signal(SIGSTOP);
      bool stopped = false;
      for (int i = 0; i < 1000 && !stopped; ++i) {
        stopped = ipc::processStopped(pid);
        if (!stopped) std::this_thread::sleep_for(1ms);
      }
      long syscall = -1;
      std::ifstream("/proc/" + std::to_string(pid) + "/syscall") >> syscall;
      if (stopped && syscall == SYS_mq_timedreceive) return true;
      daemon_->signal(SIGCONT);
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
  // Messages waiting in mqxd's queue; -1 if it cannot be read.
  long queuedRequests() {
    const mqd_t queue = mq_open(names().daemonQueue.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (queue == static_cast<mqd_t>(-1)) return -1;
    mq_attr attributes{};
    const long count = mq_getattr(queue, &attributes) == 0 ? attributes.mq_curmsgs : -1;
    mq_close(queue);
    return count;
  }
  // Waits until `name`'s record asks for admission (set before its message).
  bool waitUntilAsking(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        ipc::RobustLock lock(segment_->state().lock);
        for (const auto& record : segment_->state().clients)
          if (record.state == ipc::ClientState::Waiting && record.admissionRequested != 0 && name == record.name)
            return true;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  std::vector<std::string> events() {
    std::ifstream file(log_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(file, line);)
      lines.push_back(line);
    return lines;
  }
  static std::size_t indexOf(const std::vector<std::string>& lines, const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  }

  // Two jobs of one program, `name`, that declare nothing, under the default's
  // rule (the paper's weight counts them 0) on a 100 MiB node: each holds
  // `mib` for `ms` milliseconds; the second arrives while the first waits or
  // runs. Returns the log of their starts and ends ("start a" ... "end b").
  std::vector<std::string> twoUndeclaredJobs(const std::string& name, int mib, int ms) {
    environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
    environment_["MQX_DAEMON_ADMISSION"] = "adaptive";
    environment_["MQX_DAEMON_UNDECLARED_SETTLE_MS"] = "300";
    startDaemon();
    auto job = [&](const std::string& tag) {
      return run({"--name", name, "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                  "echo start " + tag + " >> " + log_ + "; " + SIM_CLIENT_PATH + " hold-budget " +
                      std::to_string(mib << 20) + " " + std::to_string(ms) + " && echo end " + tag + " >> " + log_});
    };
    auto a = job("a");
    waitUntilArrived(name);
    auto b = job("b");
    EXPECT_EQ(a->wait(20s), 0);
    EXPECT_EQ(b->wait(20s), 0);
    return events();
  }

  std::vector<std::string> plans_;
  std::string log_ = "/tmp/mqx-admission-log-" + std::to_string(getpid()) + "-" +
                     std::to_string(reinterpret_cast<std::uintptr_t>(this));
};

TEST_F(Admission, WeightPostponesInArrivalOrderAndAdmitsWhenAQueryEnds) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  auto a = query("a", {"--plan", plan("a", "60", "90")});
  auto b = query("b", {"--plan", plan("b", "60", "90")});
  auto c = query("c", {"--plan", plan("c", "30", "30")}); // would fit beside a, but b came first
  auto lines = eventsAfter({a.get(), b.get(), c.get()});
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "start a");
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b"));
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start c"));
  // b (60) and c (30) fit together: c does not wait for b's end.
  EXPECT_LT(indexOf(lines, "start c"), indexOf(lines, "end b"));
}

TEST_F(Admission, PeakAdmitsByPeakDemand) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  environment_["MQX_DAEMON_ADMISSION"] = "peak";
  startDaemon();
  // Weighted 30 each (Weight would run them together), peak 60 each.
  auto a = query("a", {"--plan", plan("a", "30", "60")});
  auto b = query("b", {"--plan", plan("b", "30", "60")});
  auto lines = eventsAfter({a.get(), b.get()});
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b"));
}

TEST_F(Admission, FixNRunsAtMostNQueries) {
  environment_["MQX_DAEMON_ADMISSION"] = "fix";
  environment_["MQX_DAEMON_FIX_N"] = "2";
  startDaemon();
  auto a = query("a", {});
  auto b = query("b", {});
  auto c = query("c", {});
  auto lines = eventsAfter({a.get(), b.get(), c.get()});
  EXPECT_LT(indexOf(lines, "start b"), indexOf(lines, "end a")) << "two run at once";
  EXPECT_GT(indexOf(lines, "start c"), std::min(indexOf(lines, "end a"), indexOf(lines, "end b")));
}

// A query's record exists from the moment it joins, before it has declared
// its demand and asked to be admitted (mqx-run reads its plan in between):
// mqxd must not admit it then, with no demand at all (nor before a learned
// demand could apply). Once it asks, it is admitted.
TEST_F(Admission, AJoinedQueryIsNotAdmittedBeforeItAsks) {
  startDaemon();
  auto early = ipc::AdmissionClient::connect(ipc::NodeOptions{instance_}, ipc::AdmissionOptions{}, "early");
  ASSERT_NE(early, nullptr);
  auto stateOf = [&] {
    ipc::RobustLock lock(segment_->state().lock);
    return segment_->state().clients[early->membership().slot()].state;
  };
  std::this_thread::sleep_for(500ms); // several passes of mqxd's admission
  EXPECT_EQ(stateOf(), ipc::ClientState::Waiting) << "admitted before it declared its demand and asked";
  ASSERT_TRUE(early->waitForAdmission(std::uint64_t{1} << 20, std::uint64_t{1} << 20));
  EXPECT_EQ(stateOf(), ipc::ClientState::Running);
}

TEST_F(Admission, DemandIsLearnedFromAnEarlierRunOfTheSameQuery) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  // First run of "learner": no plan; its process holds 80 MiB for a while.
  auto first = run({"--name", "learner", "--", SIM_CLIENT_PATH, "hold-budget", std::to_string(80 << 20), "400"});
  EXPECT_EQ(first->wait(20s), 0);
  std::this_thread::sleep_for(200ms); // the daemon records it
  {
    std::ifstream history("/tmp/mqx-test-demand-" + instance_);
    std::stringstream text;
    text << history.rdbuf();
    EXPECT_EQ(text.str(), "learner " + std::to_string(80 << 20) + "\n");
  }
  // Now a 50 MiB query runs; "learner" (80 MiB, learned) must wait for it.
  auto other = query("other", {"--plan", plan("other", "50", "50")}, "0.5");
  auto second = query("learner", {"--name", "learner"}, "0.1");
  auto lines = eventsAfter({other.get(), second.get()});
  EXPECT_LT(indexOf(lines, "end other"), indexOf(lines, "start learner"));
}

TEST_F(Admission, RunningQueryDemandIsUpdatedByWhatItHolds) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  // No plan, no history: admitted with demand 0, then holds 80 MiB.
  auto holder = run({"--name", "unknown", "--", SIM_CLIENT_PATH, "hold-budget", std::to_string(80 << 20), "700"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  auto other = query("other", {"--plan", plan("other", "50", "50")}, "0.05");
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(events().empty()) << "80 MiB held + 50 MiB declared exceed 100 MiB: 'other' waits";
  EXPECT_EQ(holder->wait(10s), 0);
  EXPECT_EQ(other->wait(10s), 0);
  EXPECT_EQ(events().size(), 2u);
}

// A query that declares nothing and was never learned counts as its whole
// device until what its processes hold stops growing (UndeclaredDemand):
// two 60 MiB jobs on a 100 MiB node run one after the other, not both at
// once (each would count 0 at arrival).
TEST_F(Admission, UndeclaredJobsOfOneProgramThatCannotShareTheDeviceRunOneAfterTheOther) {
  const auto lines = twoUndeclaredJobs("job", 60, 1500);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b")) << "60 + 60 MiB do not fit in 100 MiB";
}

// Once a running job's working set is measured, a waiting job of the same
// program is counted at that size: small ones then share the device.
TEST_F(Admission, UndeclaredJobsOfOneProgramShareTheDeviceOnceOneIsMeasuredSmall) {
  const auto lines = twoUndeclaredJobs("small", 10, 3000);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_LT(indexOf(lines, "start b"), indexOf(lines, "end a")) << "10 + 10 MiB fit: b need not wait for a's end";
}

TEST_F(Admission, PostponedQueryIsAdmittedWhenARunningQueryDemandDrops) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  // "a" declares 80 MiB, then its process says it needs 20 MiB from now on.
  auto a = updatingQuery("a", "80", 20, 300, 1500);
  waitUntilArrived("a");
  auto b = query("b", {"--plan", plan("b", "50", "50")}, "0.05");
  auto lines = eventsAfter({b.get(), a.get()});
  EXPECT_LT(indexOf(lines, "end b"), indexOf(lines, "end a")) << "b ran while a was still running";
}

TEST_F(Admission, RunningQueryDemandRaisedByUpdatePostponesLaterQueries) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  // "a" declares 20 MiB and raises it to 90 MiB at once; "b" (50 MiB)
  // arrives after the update and must wait for a's end.
  auto a = updatingQuery("a", "20", 90, 0, 700);
  // mqxd's queue is FIFO: the update is there before b's request.
  ASSERT_TRUE(a->waitForLine("updated", 10s));
  auto b = query("b", {"--plan", plan("b", "50", "50")}, "0.05");
  auto lines = eventsAfter({a.get(), b.get()});
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b"));
}

TEST_F(Admission, AnUpdateQueuedBehindOtherMessagesCountsForTheNextArrival) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  startDaemon();
  // a (declared 20 MiB) raises its demand to 90 MiB one second after it
  // starts and runs 1.5 s more; b (50 MiB) arrives after the update.
  auto a = updatingQuery("a", "20", 90, 1000, 1500);
  ASSERT_TRUE(waitForEvent("start a", 10s));
  // mqxd is stopped with another message queued ahead of the update, then
  // b arrives: its record asks before mqxd has read the update. Handling
  // one message per admission pass would admit b on a's old 20 MiB.
  ASSERT_TRUE(stopDaemonWaitingForMessages()) << "mqxd was never seen waiting for a message";
  // Resumed on every way out, so that a failed assertion below does not
  // leave TearDown's SIGTERM pending on a stopped mqxd.
  const std::unique_ptr<ChildProcess, void (*)(ChildProcess*)> resume(daemon_.get(),
                                                                      [](ChildProcess* d) { d->signal(SIGCONT); });
  ASSERT_EQ(queuedRequests(), 0) << "a message (the update?) came before mqxd was stopped; raise a's delay";
  ASSERT_TRUE(
      ipc::sendTo(names().daemonQueue, ipc::Message::of(ipc::MessageKind::DemandUpdate, getpid(), ipc::kNoSlot)));
  ASSERT_TRUE(a->waitForLine("updated", 10s));
  auto b = run({"--name", "b", "--plan", plan("b", "50", "50"), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                "echo start b >> " + log_ + "; echo end b >> " + log_});
  ASSERT_TRUE(waitUntilAsking("b")) << "b never asked for admission";
  daemon_->signal(SIGCONT);
  auto lines = eventsAfter({a.get(), b.get()});
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b"));
}

// The adaptive default runs one query at a time where no two of the queries'
// working sets fit the device together (AdaptiveAdmission::admissionLimit).
// A running query counts at least the peak it was admitted with: its
// processes' updates say what their kernels reference, not what it keeps
// resident (NodeDaemon::workingSetOf; on the H200 the bound went unseen and
// the limit grew to 4 where no four SSB queries' peaks fit).
TEST_F(Admission, AdaptiveCountsARunningQueryAtThePeakItWasAdmittedWith) {
  environment_["MQX_DAEMON_CAPACITY"] = "100MiB";
  environment_["MQX_DAEMON_ADMISSION"] = "adaptive";
  startDaemon();
  // a declares a 60 MiB peak; its process reports 10 MiB at once and runs 2 s.
  auto a = updatingQuery("a", "60", 10, 0, 2000);
  ASSERT_TRUE(a->waitForLine("updated", 10s));
  const auto updated = std::chrono::steady_clock::now() + 10s;
  for (bool seen = false; !seen; std::this_thread::sleep_for(5ms)) {
    ASSERT_LT(std::chrono::steady_clock::now(), updated) << "mqxd never applied a's update";
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      seen = seen || (record.state == ipc::ClientState::Running && std::string("a") == record.name &&
                      record.peakDemand == (10u << 20));
  }
  std::this_thread::sleep_for(300ms); // mqxd samples a running alone (liveness interval 100 ms)
  // b (weighted 30 MiB, peak 60 MiB) asks while mqxd is stopped, so that mqxd
  // samples the node with b waiting before its admission pass: Weight's
  // check alone would admit it (10 + 30 MiB of 100), the peaks do not fit
  // (60 + 60 MiB).
  ASSERT_TRUE(stopDaemonWaitingForMessages()) << "mqxd was never seen waiting for a message";
  const std::unique_ptr<ChildProcess, void (*)(ChildProcess*)> resume(daemon_.get(),
                                                                      [](ChildProcess* d) { d->signal(SIGCONT); });
  auto b = run({"--name", "b", "--plan", plan("b", "30", "60"), "--", SIM_CLIENT_PATH, "gate", "/bin/sh", "-c",
                "echo start b >> " + log_ + "; echo end b >> " + log_});
  ASSERT_TRUE(waitUntilAsking("b")) << "b never asked for admission";
  std::this_thread::sleep_for(300ms); // past a liveness interval (100 ms)
  daemon_->signal(SIGCONT);
  auto lines = eventsAfter({a.get(), b.get()});
  EXPECT_LT(indexOf(lines, "end a"), indexOf(lines, "start b"))
      << "b ran beside a although their peaks (60 + 60 MiB) do not fit 100 MiB";
}

TEST_F(NodeFixture, DemandUpdateWithoutAQueryRecordIsRefused) {
  startDaemon();
  // Not started by mqx-run: the memory client has no query to update.
  auto lone = client({"update-demand", "1", "1", "0", "0"});
  EXPECT_EQ(lone->wait(10s), 6);
}

} // namespace
} // namespace mqx::test
