// MetricsExporter: mqxd's metrics in the Prometheus text exposition format
// (version 0.0.4: "# HELP", "# TYPE", then samples), written atomically to
// a file every daemon.metrics_interval_ms (a new file renamed over the old
// one, so a reader never sees half of it) and/or served on
// 127.0.0.1:daemon.metrics_port to GET /metrics. docs/hardening.md,
// "Metrics", lists the names.
//
// The responder runs on mqxd's loop, not a thread of its own: it answers
// once per loop pass (at most a liveness interval late), so metrics never
// race with the node state they read.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ipc/node_snapshot.hpp"

namespace mqx::daemon {

// What mqxd knows of the node at one moment: the segment (copied under its
// lock) and mqxd's own counters.
struct NodeMetrics {
  ipc::NodeSnapshot node;
  std::uint64_t queriesAdmitted = 0;
  std::vector<std::uint64_t> queriesPlaced; // queries admitted on each device (node.devices' order), total
  std::uint64_t admissionPostponements = 0; // a waiting query found not to fit (once per query and pass that changed)
  std::uint64_t messagesRefused = 0;
  double uptimeSeconds = 0;
  // Adaptive admission (docs/daemon.md): each device's concurrency limit now
  // and the seconds one eviction takes there as measured (0: none yet);
  // empty under the other policies.
  std::vector<unsigned> admissionLimits;
  std::vector<double> secondsPerEviction;
};

// The exposition text of `metrics`; per-client series carry the client's
// pid and query name only with `clientIdentities`.
std::string renderMetrics(const NodeMetrics& metrics, bool clientIdentities);
// `text` as a Prometheus label value: backslash, double quote and newline
// escaped (quotes not included).
std::string escapeLabelValue(const std::string& text);

class MetricsExporter {
public:
  // Throws std::runtime_error when the port cannot be bound.
  explicit MetricsExporter(const Config& config);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  bool enabled() const { return !file_.empty() || listener_ >= 0; }
  // Writes the file when its interval passed and answers waiting scrapes;
  // `snapshot` is called only when metrics are needed.
  void serve(const std::function<NodeMetrics()>& snapshot);
  // The file, written now (at shutdown: the last state).
  void writeFile(const NodeMetrics& metrics);
  // The port it listens on (0: none).
  unsigned port() const { return port_; }

private:
  void answer(int connection, const std::function<NodeMetrics()>& snapshot);

  std::string file_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point lastWrite_{};
  int listener_ = -1;
  unsigned port_ = 0;
  // daemon.metrics_client_identities: pids and query names in the labels
  // (the file is then 0600; without them 0644, for a collector of another
  // user).
  bool clientIdentities_ = false;
};

} // namespace mqx::daemon
