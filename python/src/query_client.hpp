// QueryClient: mqx.Client, a query's membership of the node as mqx-run has it
// (ipc::AdmissionClient over a Query record): it arrives (claims a record,
// which fixes its place in the admission order), asks for admission with its
// weighted and peak demand (paper §5), may update its demand while it runs,
// and releases. The wait is mqx-run's (AdmissionClient::waitForAdmission),
// with a timeout, a bound on the node's lock, and Python's signals checked
// while it waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "ipc/admission_client.hpp"

namespace mqx::python {

class QueryClient {
public:
  // Joins the node of `config` (DaemonNotRunning when there is none) and
  // declares the demand at once, so that mqxd never sees the record without it.
  // `device` (a GPU UUID, sim-<n> or a node index; "": mqxd places the query)
  // is the device it asks for (mqx-run --device); MqxError when the node has
  // none such.
  QueryClient(const Config& config, const std::string& name, std::uint64_t weightedDemand, std::uint64_t peakDemand,
              const std::string& device = {});
  ~QueryClient() { close(); }
  QueryClient(const QueryClient&) = delete;
  QueryClient& operator=(const QueryClient&) = delete;

  // Asks mqxd to admit the query and waits, at most `timeout` (none: for
  // ever, but still ending on a dead daemon or a Python signal). Returns the
  // seconds waited. AdmissionTimeout or DaemonNotRunning withdraw the query.
  double requestAdmission(std::optional<std::uint64_t> weightedDemand, std::optional<std::uint64_t> peakDemand,
                          std::optional<double> timeoutSeconds);
  // The query's demand changed (waiting or running); mqxd re-runs admission.
  void updateDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand);
  // The query ended: mqxd admits the next ones. Leaves the node. Idempotent.
  void release();
  // Leaves the node (withdraws a waiting query). Idempotent.
  void close();

  std::string state();
  // The device the query runs on once admitted (its identity), else nullopt.
  std::optional<std::string> device();
  std::int64_t slot() const { return slot_; }
  const std::string& name() const { return name_; }
  const std::string& instance() const { return instance_; }

private:
  // The admission client, shared: another Python thread may close() the
  // client while this one waits with the GIL released.
  std::shared_ptr<ipc::AdmissionClient> member(const char* operation);
  std::shared_ptr<ipc::AdmissionClient> current();
  bool daemonAlive();
  void checkPythonSignals();

  std::mutex clientMutex_; // guards client_ itself (copies and the reset)
  std::shared_ptr<ipc::AdmissionClient> client_;
  std::string name_;
  std::string instance_;
  std::int64_t slot_ = -1;
  std::uint64_t weightedDemand_ = 0;
  std::uint64_t peakDemand_ = 0;
  bool requested_ = false;
  bool admitted_ = false;
  bool released_ = false;
};

} // namespace mqx::python
