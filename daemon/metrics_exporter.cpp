#include "metrics_exporter.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/log.hpp"

namespace mqx::daemon {
namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename Value> void sample(std::string& out, const char* name, Value value, const std::string& labels = {}) {
  if (labels.empty())
    fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
  else
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
}

// A family of one unlabelled sample.
void single(std::string& out, const char* name, const char* type, const char* help, std::uint64_t value) {
  family(out, name, type, help);
  sample(out, name, value);
}

// The device a memory client draws on or a query runs on ("" for a query
// not placed yet).
// The pid and the query's name only with daemon.metrics_client_identities:
// the port is open to every local user.
std::string clientLabels(const ipc::ClientSnapshot& client, bool identities) {
  if (!identities)
    return fmt::format("slot=\"{}\",state=\"{}\",device=\"{}\"", client.slot, ipc::toString(client.state),
                       escapeLabelValue(client.deviceIdentity));
  return fmt::format("slot=\"{}\",pid=\"{}\",state=\"{}\",name=\"{}\",device=\"{}\"", client.slot, client.pid,
                     ipc::toString(client.state), escapeLabelValue(client.name),
                     escapeLabelValue(client.deviceIdentity));
}

std::string deviceLabels(const ipc::DeviceSnapshot& device) {
  return fmt::format("device=\"{}\",index=\"{}\"", escapeLabelValue(device.identity), device.index);
}

// Each device's budget, use and queries (docs/daemon.md, "Several GPUs").
void renderDevices(std::string& out, const NodeMetrics& metrics) {
  const auto& devices = metrics.node.devices;
  auto perDevice = [&](const char* name, const char* type, const char* help, auto value) {
    family(out, name, type, help);
    for (const ipc::DeviceSnapshot& device : devices)
      sample(out, name, value(device), deviceLabels(device));
  };
  perDevice("mqx_device_capacity_bytes", "gauge", "A device's budget.",
            [](const ipc::DeviceSnapshot& d) { return d.capacity; });
  perDevice("mqx_device_used_bytes", "gauge", "Bytes the memory clients on a device hold.",
            [](const ipc::DeviceSnapshot& d) { return d.usedBytes; });
  perDevice("mqx_device_running_queries", "gauge", "Admitted queries running on a device.",
            [](const ipc::DeviceSnapshot& d) { return std::uint64_t{d.runningQueries}; });
  perDevice("mqx_device_running_weighted_demand_bytes", "gauge",
            "Sum of the weighted demands of the queries running on a device.",
            [](const ipc::DeviceSnapshot& d) { return d.runningWeightedDemand; });
  perDevice("mqx_device_memory_clients", "gauge", "Memory clients drawing on a device.",
            [](const ipc::DeviceSnapshot& d) { return std::uint64_t{d.memoryClients}; });
  perDevice("mqx_device_queries_placed_total", "counter", "Queries mqxd admitted on a device.",
            [&](const ipc::DeviceSnapshot& d) {
              return d.index < metrics.queriesPlaced.size() ? metrics.queriesPlaced[d.index] : 0;
            });
  if (metrics.admissionLimits.empty()) return; // not adaptive
  perDevice("mqx_device_admission_limit", "gauge", "Adaptive admission's concurrency limit on a device.",
            [&](const ipc::DeviceSnapshot& d) {
              return std::uint64_t{d.index < metrics.admissionLimits.size() ? metrics.admissionLimits[d.index] : 0};
            });
  perDevice("mqx_device_eviction_seconds", "gauge", "What one eviction takes on a device, as measured (0: none yet).",
            [&](const ipc::DeviceSnapshot& d) {
              return d.index < metrics.secondsPerEviction.size() ? metrics.secondsPerEviction[d.index] : 0.0;
            });
}

// One field of ClientActivity as a node-wide family and a per-client one
// (memory clients only: queries publish no activity).
struct ActivityField {
  const char* node;
  const char* client;
  const char* type;
  const char* help;
  std::uint64_t ipc::ClientActivity::*value;
};

constexpr ActivityField kActivityFields[] = {
    {"mqx_bytes_to_device_total", "mqx_client_bytes_to_device_total", "counter", "Bytes transferred host to device.",
     &ipc::ClientActivity::bytesToDevice},
    {"mqx_bytes_to_host_total", "mqx_client_bytes_to_host_total", "counter",
     "Bytes transferred device to host (write-backs and reads).", &ipc::ClientActivity::bytesToHost},
    {"mqx_bytes_written_back_total", "mqx_client_bytes_written_back_total", "counter",
     "Dirty bytes saved to the swap buffer on eviction.", &ipc::ClientActivity::bytesWrittenBack},
    {"mqx_evictions_total", "mqx_client_evictions_total", "counter", "Eviction decisions (regions or pages).",
     &ipc::ClientActivity::evictions},
    {"mqx_launches_total", "mqx_client_launches_total", "counter", "Kernel launches.", &ipc::ClientActivity::launches},
    {"mqx_swap_used_bytes", "mqx_client_swap_used_bytes", "gauge", "Swap-buffer bytes handed out.",
     &ipc::ClientActivity::swapUsedBytes},
    {"mqx_swap_reserved_bytes", "mqx_client_swap_reserved_bytes", "gauge", "Swap-buffer bytes held from the system.",
     &ipc::ClientActivity::swapReservedBytes},
};

void renderActivity(std::string& out, const ipc::NodeSnapshot& node, bool identities) {
  for (const ActivityField& field : kActivityFields) {
    family(out, field.node, field.type,
           fmt::format("{} Node total: live memory clients{}.", field.help,
                       std::string_view(field.type) == "counter" ? " and those that left or died" : "")
               .c_str());
    sample(out, field.node, node.activity.*field.value);
    family(out, field.client, field.type, fmt::format("{} Of one memory client.", field.help).c_str());
    for (const ipc::ClientSnapshot& client : node.clients)
      if (client.state == ipc::ClientState::Memory)
        sample(out, field.client, client.activity.*field.value, clientLabels(client, identities));
  }
}

} // namespace

std::string escapeLabelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string renderMetrics(const NodeMetrics& metrics, bool clientIdentities) {
  const ipc::NodeSnapshot& m = metrics.node;
  std::string out;
  single(out, "mqx_node_capacity_bytes", "gauge", "The node's device budget (of every device together).", m.capacity);
  single(out, "mqx_node_used_bytes", "gauge", "Device bytes the node's processes hold (on every device).", m.usedBytes);
  renderDevices(out, metrics);

  std::uint64_t byState[4] = {};
  std::uint64_t runningWeighted = 0, waitingWeighted = 0;
  for (const ipc::ClientSnapshot& client : m.clients) {
    ++byState[static_cast<std::uint32_t>(client.state) % 4];
    if (client.state == ipc::ClientState::Running) runningWeighted += client.weightedDemand;
    if (client.state == ipc::ClientState::Waiting) waitingWeighted += client.weightedDemand;
  }
  family(out, "mqx_clients", "gauge", "Client records by state (waiting and running queries, memory clients).");
  for (auto state : {ipc::ClientState::Waiting, ipc::ClientState::Running, ipc::ClientState::Memory})
    sample(out, "mqx_clients", byState[static_cast<std::uint32_t>(state)],
           fmt::format("state=\"{}\"", ipc::toString(state)));
  single(out, "mqx_admission_queue_length", "gauge", "Queries waiting for admission.",
         byState[static_cast<std::uint32_t>(ipc::ClientState::Waiting)]);
  family(out, "mqx_weighted_demand_bytes", "gauge",
         "Sum of the weighted demands (paper section 5) of running and of waiting queries.");
  sample(out, "mqx_weighted_demand_bytes", runningWeighted, "state=\"running\"");
  sample(out, "mqx_weighted_demand_bytes", waitingWeighted, "state=\"waiting\"");

  // A gauge per query record (memory == false) or per memory client.
  auto perClient = [&](const char* name, const char* help, bool memory, std::uint64_t ipc::ClientSnapshot::*value) {
    family(out, name, "gauge", help);
    for (const ipc::ClientSnapshot& client : m.clients)
      if ((client.state == ipc::ClientState::Memory) == memory)
        sample(out, name, client.*value, clientLabels(client, clientIdentities));
  };
  perClient("mqx_client_weighted_demand_bytes", "A query's weighted demand.", false,
            &ipc::ClientSnapshot::weightedDemand);
  perClient("mqx_client_peak_demand_bytes", "A query's peak demand.", false, &ipc::ClientSnapshot::peakDemand);
  perClient("mqx_client_held_bytes", "Device bytes a memory client holds.", true, &ipc::ClientSnapshot::budgetHeld);

  renderActivity(out, m, clientIdentities);

  single(out, "mqx_evictions_served_total", "counter", "Cross-process eviction requests that freed something.",
         m.evictionRequestsServed);
  single(out, "mqx_bytes_evicted_for_others_total", "counter", "Bytes evicted on request of another process.",
         m.bytesEvictedForOthers);
  single(out, "mqx_reclaimed_bytes_total", "counter", "Bytes taken back from dead clients.", m.reclaimedBytes);
  single(out, "mqx_dead_clients_total", "counter", "Clients found dead and reclaimed.", m.deadClients);
  single(out, "mqx_queries_admitted_total", "counter", "Queries mqxd admitted.", metrics.queriesAdmitted);
  single(out, "mqx_admission_postponements_total", "counter", "Times a waiting query did not fit and was postponed.",
         metrics.admissionPostponements);
  single(out, "mqx_messages_refused_total", "counter",
         "Messages refused: not from the registered client of the slot they name, or out of range.",
         metrics.messagesRefused);
  family(out, "mqx_daemon_uptime_seconds", "gauge", "Seconds since mqxd started.");
  fmt::format_to(std::back_inserter(out), "mqx_daemon_uptime_seconds {:.3f}\n", metrics.uptimeSeconds);
  return out;
}

MetricsExporter::MetricsExporter(const Config& config)
    : file_(config.metricsFile), interval_(config.metricsIntervalMilliseconds),
      clientIdentities_(config.metricsClientIdentities) {
  if (config.metricsPort == 0) return;
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error(fmt::format("metrics: socket: {}", std::strerror(errno)));
  const int yes = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(config.metricsPort));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK); // local only; every local user may still connect
  if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(listener_, 8) != 0) {
    const std::string error = std::strerror(errno);
    close(listener_);
    listener_ = -1;
    throw std::runtime_error(
        fmt::format("metrics: cannot listen on 127.0.0.1:{} (daemon.metrics_port): {}", config.metricsPort, error));
  }
  port_ = config.metricsPort;
}

MetricsExporter::~MetricsExporter() {
  if (listener_ >= 0) close(listener_);
}

void MetricsExporter::serve(const std::function<NodeMetrics()>& snapshot) {
  const auto now = std::chrono::steady_clock::now();
  if (!file_.empty() && now - lastWrite_ >= interval_) {
    lastWrite_ = now;
    writeFile(snapshot());
  }
  // A few waiting scrapes per pass: a flood of connections cannot hold up
  // the daemon's loop for long.
  for (int i = 0; listener_ >= 0 && i < 4; ++i) {
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) break; // EAGAIN: nobody waits
    answer(connection, snapshot);
    close(connection);
  }
}

void MetricsExporter::writeFile(const NodeMetrics& metrics) {
  if (file_.empty()) return;
  if (const std::string error =
          writeFileReplacing(file_, renderMetrics(metrics, clientIdentities_), clientIdentities_ ? 0600 : 0644);
      !error.empty())
    log(LogLevel::Warn, "metrics: {} (daemon.metrics_file)", error);
}

void MetricsExporter::answer(int connection, const std::function<NodeMetrics()>& snapshot) {
  // The request line and headers, waited for at most 200 ms in all.
  std::string request;
  char buffer[1024];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd ready{connection, POLLIN, 0};
    if (left <= 0 || poll(&ready, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t got = recv(connection, buffer, sizeof buffer, 0);
    if (got <= 0) break;
    request.append(buffer, static_cast<std::size_t>(got));
  }
  std::string status = "200 OK", body;
  if (request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET / ", 0) == 0) {
    body = renderMetrics(snapshot(), clientIdentities_);
  } else {
    status = "404 Not Found";
    body = "mqxd serves GET /metrics\n";
  }
  const std::string response = fmt::format("HTTP/1.0 {}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                           "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                                           status, body.size(), body);
  std::string_view rest = response;
  while (!rest.empty()) {
    const ssize_t sent = send(connection, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (sent <= 0) break; // the scraper went away
    rest.remove_prefix(static_cast<std::size_t>(sent));
  }
}

} // namespace mqx::daemon
