#include "query_client.hpp"

#include <pybind11/pybind11.h>
#include <unistd.h>

#include <thread>

#include "errors.hpp"
#include "ipc/messages.hpp"
#include "node_status.hpp"

namespace py = pybind11;

namespace mqx::python {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kLockTimeout = std::chrono::milliseconds(2000);
constexpr auto kPollInterval = std::chrono::milliseconds(2);
constexpr auto kSignalInterval = std::chrono::milliseconds(50);

std::string where(const std::string& instance) {
  return instance.empty() ? std::string("this user") : "this user and instance '" + instance + "'";
}

} // namespace

QueryClient::QueryClient(const Config& config, const std::string& name, std::uint64_t weightedDemand,
                         std::uint64_t peakDemand)
    : name_(name), instance_(config.daemonInstance) {
  try {
    client_ = ipc::DaemonClient::connect(config, ipc::DaemonClient::Role::Query, name);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& error) {
    throw MqxError(error.what()); // e.g. every client record in use
  }
  if (client_ == nullptr) throw DaemonNotRunning("mqx: no mqxd is running for " + where(instance_));
  slot_ = client_->slot();
  declare(weightedDemand, peakDemand);
}

std::shared_ptr<ipc::DaemonClient> QueryClient::current() {
  std::lock_guard guard(clientMutex_);
  return client_;
}

std::shared_ptr<ipc::DaemonClient> QueryClient::member(const char* operation) {
  auto client = current();
  if (client == nullptr) throw MqxError(std::string("mqx: cannot ") + operation + ": the client has left the node");
  return client;
}

void QueryClient::declare(std::uint64_t weightedDemand, std::uint64_t peakDemand, bool requested) {
  const auto client = member("declare a demand");
  ipc::NodeState& node = client->node();
  TimedNodeLock lock(node, kLockTimeout);
  ipc::ClientRecord& record = node.clients[slot_];
  if (record.pid != getpid()) throw MqxError("mqx: this client's record was reclaimed by mqxd");
  record.weightedDemand = weightedDemand_ = weightedDemand;
  record.peakDemand = peakDemand_ = peakDemand;
  if (requested) record.admissionRequested = 1; // after the demand: what admission sees is final
}

bool QueryClient::daemonAlive() {
  const auto client = current();
  return client != nullptr && client->daemonAlive();
}

void QueryClient::checkPythonSignals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

double QueryClient::requestAdmission(std::optional<std::uint64_t> weightedDemand,
                                     std::optional<std::uint64_t> peakDemand, std::optional<double> timeoutSeconds) {
  const auto shared = member("request admission");
  ipc::DaemonClient& client = *shared;
  if (requested_) throw MqxError("mqx: admission was already requested for query '" + name_ + "'");
  if (timeoutSeconds && *timeoutSeconds < 0) throw std::invalid_argument("timeout must not be negative");
  const auto start = Clock::now();
  py::gil_scoped_release released;
  try {
    declare(weightedDemand.value_or(weightedDemand_), peakDemand.value_or(peakDemand_), true);
    ipc::Message request = ipc::Message::of(ipc::MessageKind::AdmissionRequest, getpid(), client.slot());
    request.weightedDemand = weightedDemand_;
    request.peakDemand = peakDemand_;
    if (!ipc::sendTo(client.names().daemonQueue, request)) {
      if (!daemonAlive()) throw DaemonNotRunning("mqx: mqxd of " + where(instance_) + " went away");
      throw MqxError("mqx: cannot send the admission request to " + client.names().daemonQueue);
    }
    requested_ = true;
    auto nextSignalCheck = start + kSignalInterval;
    for (;;) {
      ipc::ClientState state;
      pid_t owner;
      {
        TimedNodeLock lock(client.node(), kLockTimeout);
        state = client.node().clients[slot_].state;
        owner = client.node().clients[slot_].pid;
      }
      const auto now = Clock::now();
      const double waited = std::chrono::duration<double>(now - start).count();
      if (owner != getpid() || state == ipc::ClientState::Free)
        throw MqxError("mqx: mqxd reclaimed the record of query '" + name_ + "'");
      if (state == ipc::ClientState::Running) {
        admitted_ = true;
        return waited;
      }
      if (!daemonAlive())
        throw DaemonNotRunning("mqx: mqxd of " + where(instance_) + " went away before admitting query '" + name_ +
                               "'");
      if (timeoutSeconds && waited >= *timeoutSeconds)
        throw AdmissionTimeout("mqx: query '" + name_ + "' was not admitted within " + std::to_string(*timeoutSeconds) +
                               " s (weighted demand " + std::to_string(weightedDemand_) + " bytes, peak " +
                               std::to_string(peakDemand_) + " bytes); withdrawn");
      if (now >= nextSignalCheck) {
        checkPythonSignals();
        nextSignalCheck = now + kSignalInterval;
      }
      std::this_thread::sleep_for(kPollInterval);
    }
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
  std::shared_ptr<ipc::DaemonClient> leaving;
  {
    std::lock_guard guard(clientMutex_);
    leaving = std::move(client_);
  }
  if (leaving != nullptr) leaving->leave();
}

std::string QueryClient::state() {
  const auto client = current();
  if (client == nullptr) return released_ ? "released" : "closed";
  TimedNodeLock lock(client->node(), kLockTimeout);
  const ipc::ClientRecord& record = client->node().clients[slot_];
  if (record.pid != getpid()) return "reclaimed";
  return ipc::toString(record.state);
}

} // namespace mqx::python
