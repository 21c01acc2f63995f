// mqxd's metrics: the file (rewritten atomically every interval) and the
// HTTP responder on 127.0.0.1 both give text that follows the Prometheus
// exposition format (exposition_format.hpp) and that says what the node is
// doing: capacity, bytes held, clients by state, the admission queue and
// weighted demands, a query name with quotes and backslashes escaped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "exposition_format.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

unsigned freePort() {
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
  close(probe);
  return ntohs(address.sin_port);
}

// The whole HTTP response to "GET <path>".
std::string httpGet(unsigned port, const std::string& path) {
  const int connection = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(connection);
    return {};
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  send(connection, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[4096];
  for (ssize_t got; (got = recv(connection, buffer, sizeof buffer, 0)) > 0;)
    response.append(buffer, static_cast<std::size_t>(got));
  close(connection);
  return response;
}

std::string body(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Metrics : public NodeFixture {
protected:
  std::string plan(const std::string& name, int mebibytes) {
    const std::string path = "/tmp/mqx-metrics-plan-" + instance_ + "-" + name;
    std::ofstream(path) << "[[operator]]\ntime = 1.0\nmemory = \"" << mebibytes << "MiB\"\n";
    plans_.push_back(path);
    return path;
  }
  void TearDown() override {
    NodeFixture::TearDown();
    for (const auto& path : plans_)
      std::remove(path.c_str());
    std::remove(file_.c_str());
  }
  // Polls the file until `ready` holds for its parsed content.
  Exposition waitForFile(const std::function<bool(const Exposition&)>& ready) {
    Exposition last;
    for (int i = 0; i < 200; ++i) {
      last = parseExposition(readFile(file_));
      if (last.errors.empty() && ready(last)) break;
      std::this_thread::sleep_for(20ms);
    }
    return last;
  }
  std::vector<std::string> plans_;
  std::string file_;
};

std::string joined(const std::vector<std::string>& errors) {
  std::string text;
  for (const auto& error : errors)
    text += error + "\n";
  return text;
}

TEST_F(Metrics, FileAndHttpFollowTheExpositionFormatAndShowTheNode) {
  file_ = "/tmp/mqx-metrics-" + instance_ + ".prom";
  const unsigned port = freePort();
  environment_["MQX_DAEMON_METRICS_FILE"] = file_;
  environment_["MQX_DAEMON_METRICS_CLIENT_IDENTITIES"] = "true"; // the labels checked name queries and pids
  environment_["MQX_DAEMON_METRICS_PORT"] = std::to_string(port);
  environment_["MQX_DAEMON_METRICS_INTERVAL_MS"] = "20";
  startDaemon();
  // A memory client holding 8 MiB, a running query of 30 MiB and a waiting
  // one (30 more do not fit in 32) whose name needs escaping.
  auto holder = client({"hold-budget", std::to_string(8 << 20), "0"});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  auto running = run({"--plan", plan("r", 30), "--name", "running", "--", "/bin/sleep", "5"});
  std::this_thread::sleep_for(300ms);
  const std::string oddName = "we\"ird\\name";
  auto waiting = run({"--plan", plan("w", 30), "--name", oddName, "--", "/bin/sleep", "5"});

  const Exposition file = waitForFile([](const Exposition& m) {
    return m.value("mqx_admission_queue_length") == 1 && m.value("mqx_clients{state=\"memory\"}") == 1;
  });
  ASSERT_TRUE(file.errors.empty()) << joined(file.errors);
  EXPECT_EQ(file.value("mqx_node_capacity_bytes"), 32 << 20);
  EXPECT_EQ(file.value("mqx_node_used_bytes"), 8 << 20);
  EXPECT_EQ(file.value("mqx_clients{state=\"running\"}"), 1);
  EXPECT_EQ(file.value("mqx_clients{state=\"waiting\"}"), 1);
  EXPECT_EQ(file.value("mqx_admission_queue_length"), 1);
  EXPECT_EQ(file.value("mqx_weighted_demand_bytes{state=\"running\"}"), 30 << 20);
  EXPECT_EQ(file.value("mqx_weighted_demand_bytes{state=\"waiting\"}"), 30 << 20);
  EXPECT_GE(file.value("mqx_queries_admitted_total"), 1);
  EXPECT_GE(file.value("mqx_admission_postponements_total"), 1);
  EXPECT_EQ(file.types.at("mqx_evictions_served_total"), "counter");
  EXPECT_EQ(file.types.at("mqx_node_used_bytes"), "gauge");
  bool oddNameFound = false; // unescaped by the checker: the same bytes as given
  for (const auto& labels : file.labelSets)
    oddNameFound |= labels.count("name") != 0 && labels.at("name") == oddName;
  EXPECT_TRUE(oddNameFound);

  const std::string response = httpGet(port, "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const Exposition scraped = parseExposition(body(response));
  EXPECT_TRUE(scraped.errors.empty()) << joined(scraped.errors);
  EXPECT_EQ(scraped.value("mqx_admission_queue_length"), 1);
  EXPECT_EQ(scraped.types, file.types);
  EXPECT_EQ(httpGet(port, "/other").rfind("HTTP/1.0 404", 0), 0u);

  // A dead client shows up in the counters once reclaimed.
  holder->signal(SIGKILL);
  holder->wait(5s);
  const Exposition after = waitForFile([](const Exposition& m) { return m.value("mqx_dead_clients_total") == 1; });
  EXPECT_EQ(after.value("mqx_dead_clients_total"), 1);
  EXPECT_EQ(after.value("mqx_reclaimed_bytes_total"), 8 << 20);
  EXPECT_EQ(after.value("mqx_node_used_bytes"), 0);
  running->signal(SIGTERM);
  waiting->signal(SIGTERM);
}

// A node of two devices (docs/daemon.md, "Several GPUs"): each device's
// budget, use and queries under a device label; the node's totals are the
// sums; each client's series names its device.
TEST_F(Metrics, EachDeviceIsShownUnderItsDeviceLabel) {
  file_ = "/tmp/mqx-metrics-" + instance_ + ".prom";
  environment_["MQX_DAEMON_METRICS_FILE"] = file_;
  environment_["MQX_DAEMON_METRICS_CLIENT_IDENTITIES"] = "true"; // the labels checked name queries and pids
  environment_["MQX_DAEMON_METRICS_INTERVAL_MS"] = "20";
  environment_["MQX_BACKEND_KIND"] = "sim";
  environment_["MQX_SIM_DEVICES"] = "2";
  environment_["MQX_DAEMON_ADMISSION"] = "adaptive"; // mqxd's default: its limit is shown per device
  environment_.erase("CUDA_VISIBLE_DEVICES");
  startDaemon();
  auto holder = client({"hold-budget", std::to_string(8 << 20), "0"}, {{"MQX_SIM_DEVICE", "sim-1"}});
  ASSERT_TRUE(holder->waitForLine("held", 10s));
  auto asked = run({"--plan", plan("a", 12), "--name", "asked", "--device", "sim-0", "--", "/bin/sleep", "5"});
  // Placed by demand once 'asked' runs: 20 MiB leave nothing on sim-0 (12 MiB
  // run there), 12 MiB on sim-1.
  bool askedRuns = false;
  for (const auto deadline = std::chrono::steady_clock::now() + 10s;
       !askedRuns && std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(2ms)) {
    ipc::RobustLock lock(segment_->state().lock);
    for (const auto& record : segment_->state().clients)
      askedRuns |= record.state == ipc::ClientState::Running && std::string(record.name) == "asked";
  }
  ASSERT_TRUE(askedRuns);
  auto placed = run({"--plan", plan("p", 20), "--name", "placed", "--", "/bin/sleep", "5"});
  const Exposition m = waitForFile([](const Exposition& m) {
    return m.value("mqx_device_running_queries{device=\"sim-0\",index=\"0\"}") == 1 &&
           m.value("mqx_device_running_queries{device=\"sim-1\",index=\"1\"}") == 1;
  });
  ASSERT_TRUE(m.errors.empty()) << joined(m.errors);
  EXPECT_EQ(m.value("mqx_node_capacity_bytes"), 64 << 20) << "both devices";
  EXPECT_EQ(m.value("mqx_node_used_bytes"), 8 << 20);
  for (const char* device : {"device=\"sim-0\",index=\"0\"", "device=\"sim-1\",index=\"1\""}) {
    EXPECT_EQ(m.value("mqx_device_capacity_bytes{" + std::string(device) + "}"), 32 << 20) << device;
    EXPECT_EQ(m.value("mqx_device_queries_placed_total{" + std::string(device) + "}"), 1) << device;
  }
  EXPECT_EQ(m.value("mqx_device_used_bytes{device=\"sim-0\",index=\"0\"}"), 0);
  EXPECT_EQ(m.value("mqx_device_used_bytes{device=\"sim-1\",index=\"1\"}"), 8 << 20);
  EXPECT_EQ(m.value("mqx_device_memory_clients{device=\"sim-1\",index=\"1\"}"), 1);
  EXPECT_EQ(m.value("mqx_device_running_weighted_demand_bytes{device=\"sim-0\",index=\"0\"}"), 12 << 20);
  EXPECT_EQ(m.value("mqx_device_running_weighted_demand_bytes{device=\"sim-1\",index=\"1\"}"), 20 << 20);
  EXPECT_EQ(m.types.at("mqx_device_queries_placed_total"), "counter");
  // Adaptive admission: each device's limit, from its initial value, and no
  // eviction priced yet.
  for (const char* device : {"device=\"sim-0\",index=\"0\"", "device=\"sim-1\",index=\"1\""}) {
    EXPECT_EQ(m.value("mqx_device_admission_limit{" + std::string(device) + "}"), 2) << device;
    EXPECT_EQ(m.value("mqx_device_eviction_seconds{" + std::string(device) + "}"), 0) << device;
  }
  std::map<std::string, std::string> deviceOf; // client name -> its device label
  for (const auto& labels : m.labelSets)
    if (labels.count("name") != 0 && labels.count("device") != 0) deviceOf[labels.at("name")] = labels.at("device");
  EXPECT_EQ(deviceOf["asked"], "sim-0");
  EXPECT_EQ(deviceOf["placed"], "sim-1");
  EXPECT_EQ(deviceOf["sim_client"], "sim-1");
  holder->signal(SIGKILL);
  // mqx-run forwards SIGTERM and ends with its query (none is left holding
  // the test's output).
  for (auto* query : {asked.get(), placed.get()}) {
    query->signal(SIGTERM);
    EXPECT_EQ(query->wait(10s), 128 + SIGTERM);
  }
}

TEST_F(Metrics, TheCheckerRejectsWhatBreaksTheFormat) {
  // The checker must be able to fail: each of these breaks one rule.
  const std::vector<std::string> broken = {
      "x 1\n",                                           // no TYPE
      "# TYPE a_total counter\na_total{l=\"v} 1\n",      // unterminated label value
      "# TYPE a gauge\na{l=\"\\q\"} 1\n",                // bad escape
      "# TYPE a counter\na 1\n",                         // counter without _total
      "# TYPE a gauge\na one\n",                         // not a number
      "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n", // not contiguous
      "# TYPE 1a gauge\n1a 1\n",                         // bad name
      "# TYPE a gauge\na 1",                             // no final newline
  };
  for (const auto& text : broken)
    EXPECT_FALSE(parseExposition(text).errors.empty()) << text;
  EXPECT_TRUE(parseExposition("# HELP a A.\n# TYPE a gauge\na{l=\"x\\\"y\\\\z\\n\"} 1\n").errors.empty());
}

TEST_F(Metrics, ABusyPortIsAClearStartError) {
  const int blocker = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(blocker, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  listen(blocker, 1);
  socklen_t length = sizeof address;
  getsockname(blocker, reinterpret_cast<sockaddr*>(&address), &length);
  environment_["MQX_DAEMON_METRICS_PORT"] = std::to_string(ntohs(address.sin_port));
  ChildProcess daemon({MQXD_PATH}, environment_);
  EXPECT_EQ(daemon.wait(5s), 1); // "mqxd: metrics: cannot listen on 127.0.0.1:<port> (daemon.metrics_port): ..."
  close(blocker);
}

} // namespace
} // namespace mqx::test
