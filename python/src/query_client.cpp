#include "query_client.hpp"

#include <pybind11/pybind11.h>
#include <unistd.h>

#include "embedded/runtime_options.hpp"
#include "errors.hpp"
#include "node_status.hpp"

namespace py = pybind11;

namespace mqx::python {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kLockTimeout = std::chrono::milliseconds(2000);
constexpr auto kSignalInterval = std::chrono::milliseconds(50);

std::string where(const std::string& instance) {
  return instance.empty() ? std::string("this user") : "this user and instance '" + instance + "'";
}

std::string lockHeldTooLong() {
  return "mqx: the node's lock has been held by another live process for more than " +
         std::to_string(kLockTimeout.count()) + " ms";
}

} // namespace

QueryClient::QueryClient(const Config& config, const std::string& name, std::uint64_t weightedDemand,
                         std::uint64_t peakDemand, const std::string& device)
    : name_(name), instance_(config.daemonInstance) {
  ipc::AdmissionOptions options = embedded::admissionOptions(config);
  options.nodeLockTimeout = kLockTimeout; // never a hang (docs/python.md)
  try {
    ipc::NodeOptions node = embedded::nodeOptions(config);
    node.device = device;
    client_ = ipc::AdmissionClient::connect(node, options, name);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& error) {
    throw MqxError(error.what()); // e.g. every client record in use
  }
  if (client_ == nullptr) throw DaemonNotRunning("mqx: no mqxd is running for " + where(instance_));
  slot_ = client_->membership().slot();
  // At once, so that mqxd never sees the record without its demand.
  if (!client_->declareDemand(weightedDemand, peakDemand)) {
    close();
    throw MqxError(lockHeldTooLong());
  }
  weightedDemand_ = weightedDemand;
  peakDemand_ = peakDemand;
}

std::shared_ptr<ipc::AdmissionClient> QueryClient::current() {
  std::lock_guard guard(clientMutex_);
  return client_;
}

std::shared_ptr<ipc::AdmissionClient> QueryClient::member(const char* operation) {
  auto client = current();
  if (client == nullptr) throw MqxError(std::string("mqx: cannot ") + operation + ": the client has left the node");
  return client;
}

bool QueryClient::daemonAlive() {
  const auto client = current();
  return client != nullptr && client->membership().daemonAlive();
}

void QueryClient::checkPythonSignals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

double QueryClient::requestAdmission(std::optional<std::uint64_t> weightedDemand,
                                     std::optional<std::uint64_t> peakDemand, std::optional<double> timeoutSeconds) {
  const auto client = member("request admission");
  if (requested_) throw MqxError("mqx: admission was already requested for query '" + name_ + "'");
  if (timeoutSeconds && *timeoutSeconds < 0) throw std::invalid_argument("timeout must not be negative");
  const auto start = Clock::now();
  py::gil_scoped_release released;
  try {
    weightedDemand_ = weightedDemand.value_or(weightedDemand_);
    peakDemand_ = peakDemand.value_or(peakDemand_);
    requested_ = true;
    ipc::AdmissionClient::AdmissionWait wait;
    if (timeoutSeconds)
      wait.timeout = std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(*timeoutSeconds));
    wait.pollInterval = kSignalInterval;
    wait.poll = [this] {
      checkPythonSignals(); // a pending signal's exception ends the wait
      return true;
    };
    switch (client->waitForAdmission(weightedDemand_, peakDemand_, wait)) {
    case ipc::AdmissionClient::Admission::Admitted:
      admitted_ = true;
      return std::chrono::duration<double>(Clock::now() - start).count();
    case ipc::AdmissionClient::Admission::DaemonGone:
      throw DaemonNotRunning("mqx: mqxd of " + where(instance_) + " went away before admitting query '" + name_ + "'");
    case ipc::AdmissionClient::Admission::TimedOut:
      throw AdmissionTimeout("mqx: query '" + name_ + "' was not admitted within " + std::to_string(*timeoutSeconds) +
                             " s (weighted demand " + std::to_string(weightedDemand_) + " bytes, peak " +
                             std::to_string(peakDemand_) + " bytes); withdrawn");
    case ipc::AdmissionClient::Admission::Reclaimed:
      throw MqxError("mqx: mqxd reclaimed the record of query '" + name_ + "'");
    case ipc::AdmissionClient::Admission::NodeLocked: throw MqxError(lockHeldTooLong());
    case ipc::AdmissionClient::Admission::Stopped: break; // poll never answers false
    }
    throw MqxError("mqx: unknown admission outcome");
  } catch (...) {
    close(); // withdrawn: mqxd must not admit a query nobody runs
    throw;
  }
}

void QueryClient::updateDemand(std::uint64_t weightedDemand, std::uint64_t peakDemand) {
  const auto client = member("update the demand");
  py::gil_scoped_release released;
  if (!client->updateDemand(weightedDemand, peakDemand)) {
    if (!daemonAlive()) throw DaemonNotRunning("mqx: mqxd of " + where(instance_) + " went away");
    throw MqxError("mqx: mqxd could not be told the new demand of query '" + name_ + "'");
  }
  weightedDemand_ = weightedDemand;
  peakDemand_ = peakDemand;
}

void QueryClient::release() {
  const auto client = current();
  if (client == nullptr) return; // released or closed already
  py::gil_scoped_release released;
  if (admitted_) client->finishQuery();
  released_ = true;
  close();
}

void QueryClient::close() {
  std::shared_ptr<ipc::AdmissionClient> leaving;
  {
    std::lock_guard guard(clientMutex_);
    leaving = std::move(client_);
  }
  if (leaving != nullptr) leaving->membership().leave();
}

std::string QueryClient::state() {
  const auto client = current();
  if (client == nullptr) return released_ ? "released" : "closed";
  ipc::NodeState& node = client->membership().node();
  TimedNodeLock lock(node, kLockTimeout);
  const ipc::ClientRecord& record = node.clients[slot_];
  if (record.pid != getpid()) return "reclaimed";
  return ipc::toString(record.state);
}

std::optional<std::string> QueryClient::device() {
  const auto client = current();
  if (client == nullptr) return std::nullopt;
  ipc::NodeState& node = client->membership().node();
  std::uint32_t device = ipc::kAnyDevice;
  {
    TimedNodeLock lock(node, kLockTimeout);
    const ipc::ClientRecord& record = node.clients[slot_];
    if (record.pid != getpid() || record.state != ipc::ClientState::Running) return std::nullopt;
    device = record.device;
  }
  const std::string identity = node.identityOf(device);
  return identity.empty() ? std::nullopt : std::optional<std::string>(identity);
}

} // namespace mqx::python
