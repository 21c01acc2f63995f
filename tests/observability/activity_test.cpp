// Client activity (issue #8, observability): a memory client's transfers,
// evictions, launches and swap use reach its record in the segment, mqxd's
// metrics and, once it left or died, the node's totals; compared with what
// the client's own MemoryManager counted (sim_client prints its statistics).
#include <fstream>
#include <sstream>

#include "exposition_format.hpp"
#include "ipc/node_snapshot.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::uint64_t kRegionBytes = 8 << 20;
constexpr int kRegions = 4; // 32 MiB: twice the node's 16 MiB
constexpr int kRounds = 2;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of the sample of `family` whose labels name `pid`; -1 if none.
double clientSample(const Exposition& metrics, const std::string& family, pid_t pid) {
  const std::string prefix = family + "{";
  const std::string label = "pid=\"" + std::to_string(pid) + "\"";
  for (const auto& [series, value] : metrics.samples)
    if (series.rfind(prefix, 0) == 0 && series.find(label) != std::string::npos) return value;
  return -1;
}

bool anySample(const Exposition& metrics, const std::string& family) {
  for (const auto& [series, value] : metrics.samples)
    if (series.rfind(family + "{", 0) == 0) return true;
  return false;
}

class ClientActivityTest : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    environment_["MQX_DAEMON_CAPACITY"] = "16MiB";
    file_ = "/tmp/mqx-activity-" + instance_ + ".prom";
    environment_["MQX_DAEMON_METRICS_FILE"] = file_;
    environment_["MQX_DAEMON_METRICS_CLIENT_IDENTITIES"] = "true"; // the labels checked name queries and pids
    environment_["MQX_DAEMON_METRICS_INTERVAL_MS"] = "20";
  }
  void TearDown() override {
    NodeFixture::TearDown();
    std::remove(file_.c_str());
  }
  ipc::NodeSnapshot snapshot() {
    ipc::RobustLock lock(segment_->state().lock);
    return ipc::snapshotOf(segment_->state());
  }
  std::optional<ipc::ClientSnapshot> record(pid_t pid) {
    for (const auto& client : snapshot().clients)
      if (client.pid == pid) return client;
    return std::nullopt;
  }
  // Polls the segment until the record of `pid` shows every launch of the
  // workload (its process published after its passes).
  std::optional<ipc::ClientSnapshot> waitForPublished(pid_t pid, std::uint64_t launches) {
    for (int i = 0; i < 500; ++i) {
      if (auto client = record(pid); client && client->activity.launches >= launches) return client;
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }
  Exposition waitForFile(const std::function<bool(const Exposition&)>& ready) {
    Exposition last;
    for (int i = 0; i < 250; ++i) {
      last = parseExposition(readFile(file_));
      if (last.errors.empty() && ready(last)) break;
      std::this_thread::sleep_for(20ms);
    }
    return last;
  }
  std::unique_ptr<ChildProcess> worker(long holdMilliseconds) {
    return client({"work-hold", std::to_string(kRegions), std::to_string(kRegionBytes), std::to_string(kRounds), "5",
                   std::to_string(holdMilliseconds)});
  }
  std::string file_;
};

// The lower bounds that the workload forces: every region was transferred
// to the device at least once, and 32 MiB in a 16 MiB budget cannot run
// without evicting dirty data, which then lives in the swap buffer.
void expectForcedByTheWorkload(const ipc::ClientActivity& activity) {
  EXPECT_GE(activity.bytesToDevice, kRegions * kRegionBytes);
  EXPECT_GT(activity.evictions, 0u);
  EXPECT_GT(activity.bytesWrittenBack, 0u);
  EXPECT_GE(activity.bytesToHost, activity.bytesWrittenBack);
  EXPECT_EQ(activity.launches, static_cast<std::uint64_t>(kRegions * kRounds));
  EXPECT_GE(activity.swapUsedBytes, kRegions * kRegionBytes - (16u << 20)); // what the device cannot hold
  EXPECT_GE(activity.swapReservedBytes, activity.swapUsedBytes);
}

void expectSameCounters(const ipc::ClientActivity& a, const ipc::ClientActivity& b) {
  EXPECT_EQ(a.bytesToDevice, b.bytesToDevice);
  EXPECT_EQ(a.bytesToHost, b.bytesToHost);
  EXPECT_EQ(a.bytesWrittenBack, b.bytesWrittenBack);
  EXPECT_EQ(a.evictions, b.evictions);
  EXPECT_EQ(a.launches, b.launches);
}

TEST_F(ClientActivityTest, SegmentMetricsAndTotalsShowWhatTheClientCounted) {
  startDaemon();
  auto process = worker(3000); // long enough to read the segment and the file while it holds still
  ASSERT_TRUE(process->waitForLine("ready", 30s));
  const auto published = waitForPublished(process->pid(), kRegions * kRounds);
  ASSERT_TRUE(published) << "no activity published within 5 s";
  const ipc::ClientActivity live = published->activity;
  expectForcedByTheWorkload(live);
  // One client: the node's totals are its activity, swap use included.
  const ipc::NodeSnapshot node = snapshot();
  expectSameCounters(node.activity, live);
  EXPECT_EQ(node.activity.swapUsedBytes, live.swapUsedBytes);
  EXPECT_EQ(node.activity.swapReservedBytes, live.swapReservedBytes);

  // The metrics file shows the same (the client holds still: nothing changes).
  const pid_t pid = process->pid();
  const Exposition metrics = waitForFile([&](const Exposition& m) {
    return clientSample(m, "mqx_client_launches_total", pid) == static_cast<double>(live.launches);
  });
  ASSERT_TRUE(metrics.errors.empty());
  EXPECT_EQ(clientSample(metrics, "mqx_client_bytes_to_device_total", pid), live.bytesToDevice);
  EXPECT_EQ(clientSample(metrics, "mqx_client_bytes_to_host_total", pid), live.bytesToHost);
  EXPECT_EQ(clientSample(metrics, "mqx_client_bytes_written_back_total", pid), live.bytesWrittenBack);
  EXPECT_EQ(clientSample(metrics, "mqx_client_evictions_total", pid), live.evictions);
  EXPECT_EQ(clientSample(metrics, "mqx_client_swap_used_bytes", pid), live.swapUsedBytes);
  EXPECT_EQ(clientSample(metrics, "mqx_client_swap_reserved_bytes", pid), live.swapReservedBytes);
  EXPECT_EQ(metrics.value("mqx_bytes_to_device_total"), live.bytesToDevice);
  EXPECT_EQ(metrics.value("mqx_swap_used_bytes"), live.swapUsedBytes);
  EXPECT_EQ(metrics.types.at("mqx_client_evictions_total"), "counter");
  EXPECT_EQ(metrics.types.at("mqx_swap_reserved_bytes"), "gauge");

  // What the client counted in the end (its check read everything back)...
  ASSERT_TRUE(process->waitForLine("ok", 30s));
  const auto evictions = process->waitForCounter("evictions", 5s);
  const auto toDevice = process->waitForCounter("bytes to device", 5s);
  const auto toHost = process->waitForCounter("bytes to host", 5s);
  const auto writtenBack = process->waitForCounter("bytes written back", 5s);
  const auto launches = process->waitForCounter("launches", 5s);
  ASSERT_TRUE(evictions && toDevice && toHost && writtenBack && launches);
  EXPECT_EQ(process->wait(30s), 0);
  EXPECT_GE(*toDevice, live.bytesToDevice);
  EXPECT_GT(*toHost, live.bytesToHost) << "reading the regions back transfers them to the host";
  // ... is exactly what the node keeps once it left: its last counters were
  // published when it removed its source, and folded into the totals when
  // its record was freed.
  ASSERT_TRUE(waitUntilBudgetFree(2s));
  const ipc::NodeSnapshot after = snapshot();
  EXPECT_TRUE(after.clients.empty());
  EXPECT_EQ(after.activity.bytesToDevice, *toDevice);
  EXPECT_EQ(after.activity.bytesToHost, *toHost);
  EXPECT_EQ(after.activity.bytesWrittenBack, *writtenBack);
  EXPECT_EQ(after.activity.evictions, *evictions);
  EXPECT_EQ(after.activity.launches, *launches);
  EXPECT_EQ(after.activity.swapUsedBytes, 0u) << "no live client, no swap in use";
  // (The totals show the last counters already while the record is still
  // there: removing the source published them before the client left.)
  const Exposition final = waitForFile([&](const Exposition& m) {
    return m.value("mqx_clients{state=\"memory\"}") == 0 &&
           m.value("mqx_bytes_to_host_total") == static_cast<double>(*toHost);
  });
  EXPECT_EQ(final.value("mqx_clients{state=\"memory\"}"), 0);
  EXPECT_EQ(final.value("mqx_bytes_to_device_total"), *toDevice);
  EXPECT_EQ(final.value("mqx_launches_total"), *launches);
  EXPECT_FALSE(anySample(final, "mqx_client_bytes_to_device_total")) << "the client's series went with its record";

  // The next client to take a record starts from zero.
  auto holder = client({"hold-budget", std::to_string(1 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  const auto fresh = record(holder->pid());
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->slot, published->slot) << "the freed record is the one taken";
  expectSameCounters(fresh->activity, ipc::ClientActivity{});
  expectSameCounters(snapshot().activity, after.activity);
  holder->signal(SIGKILL);
}

TEST_F(ClientActivityTest, AKilledClientsLastCountersStayInTheTotals) {
  startDaemon();
  auto process = worker(60000);
  ASSERT_TRUE(process->waitForLine("ready", 30s));
  const auto published = waitForPublished(process->pid(), kRegions * kRounds);
  ASSERT_TRUE(published);
  expectForcedByTheWorkload(published->activity);
  process->signal(SIGKILL);
  process->wait(5s);
  for (int i = 0; i < 200 && snapshot().deadClients == 0; ++i)
    std::this_thread::sleep_for(10ms);
  const ipc::NodeSnapshot after = snapshot();
  ASSERT_EQ(after.deadClients, 1u);
  EXPECT_TRUE(after.clients.empty());
  expectSameCounters(after.activity, published->activity);
  EXPECT_EQ(after.activity.swapReservedBytes, 0u);
}

// Two clients at once: the totals are the sum of their records, and stay
// the sum of what each counted after both left.
TEST_F(ClientActivityTest, TheTotalsAreTheSumOfTheClients) {
  environment_["MQX_DAEMON_CAPACITY"] = "32MiB";
  startDaemon();
  auto first = worker(800);
  auto second = worker(800);
  ASSERT_TRUE(first->waitForLine("ready", 30s));
  ASSERT_TRUE(second->waitForLine("ready", 30s));
  std::uint64_t printed = 0;
  for (auto* process : {first.get(), second.get()}) {
    ASSERT_TRUE(process->waitForLine("ok", 30s));
    const auto toDevice = process->waitForCounter("bytes to device", 5s);
    ASSERT_TRUE(toDevice);
    EXPECT_GE(*toDevice, kRegions * kRegionBytes);
    printed += *toDevice;
    EXPECT_EQ(process->wait(30s), 0);
  }
  ASSERT_TRUE(waitUntilBudgetFree(2s));
  EXPECT_EQ(snapshot().activity.bytesToDevice, printed);
}

} // namespace
} // namespace mqx::test
