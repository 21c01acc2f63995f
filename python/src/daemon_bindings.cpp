#include "daemon_bindings.hpp"

#include <pybind11/stl.h>

#include "config_bindings.hpp"
#include "node_status.hpp"
#include "query_client.hpp"

#ifdef MQX_PYTHON_WITH_PLANS
#include "query_plan.hpp"
#endif

namespace py = pybind11;

namespace mqx::python {
namespace {

// A byte count given as an int or a size string ("512MiB").
std::uint64_t bytesOf(const py::object& value, const char* argument) {
  if (py::isinstance<py::str>(value)) return parseSize(value.cast<std::string>(), argument);
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
    throw py::type_error(std::string(argument) + ": expected bytes (int) or a size string such as \"512MiB\"");
  const auto bytes = value.cast<long long>();
  if (bytes < 0) throw py::value_error(std::string(argument) + ": must not be negative");
  return static_cast<std::uint64_t>(bytes);
}

std::optional<std::uint64_t> optionalBytes(const py::object& value, const char* argument) {
  if (value.is_none()) return std::nullopt;
  return bytesOf(value, argument);
}

Config configFor(const std::optional<std::string>& instance, const std::optional<Config>& config) {
  Config result = config ? *config : loadConfigFrom(std::nullopt, std::nullopt);
  if (instance) {
    // The same check as daemon.instance in a file or MQX_DAEMON_INSTANCE.
    Config checked;
    applyEnvironment(checked, {{"MQX_DAEMON_INSTANCE", *instance}});
    result.daemonInstance = checked.daemonInstance;
  }
  return result;
}

py::dict clientDictionary(const ClientStatus& c) {
  py::dict d;
  d["slot"] = c.slot;
  d["state"] = c.state;
  d["pid"] = c.pid;
  d["name"] = c.name;
  d["arrival"] = c.arrival;
  d["weighted_demand"] = c.weightedDemand;
  d["peak_demand"] = c.peakDemand;
  d["budget_held"] = c.budgetHeld;
  d["observed_peak"] = c.observedPeak;
  d["query_slot"] = c.querySlot < 0 ? py::object(py::none()) : py::object(py::int_(c.querySlot));
  return d;
}

py::dict nodeDictionary(const NodeStatus& s) {
  py::dict d;
  d["instance"] = s.instance;
  d["segment"] = s.segment;
  d["daemon_pid"] = s.daemonPid;
  d["capacity"] = s.capacity;
  d["used"] = s.used;
  d["reclaimed_bytes"] = s.reclaimedBytes;
  d["dead_clients"] = s.deadClients;
  d["eviction_requests_served"] = s.evictionRequestsServed;
  d["bytes_evicted_for_others"] = s.bytesEvictedForOthers;
  py::list clients;
  for (const auto& client : s.clients)
    clients.append(clientDictionary(client));
  d["clients"] = clients;
  return d;
}

void bindStatus(py::module_& m) {
  py::class_<ClientStatus>(m, "ClientStatus", "One record of the node's segment (a copy).")
      .def_readonly("slot", &ClientStatus::slot, "the record's index")
      .def_readonly("state", &ClientStatus::state,
                    "'waiting' (a query before admission), 'running' (an admitted query), 'memory' (a process "
                    "drawing on the node budget)")
      .def_readonly("pid", &ClientStatus::pid)
      .def_readonly("name", &ClientStatus::name)
      .def_readonly("arrival", &ClientStatus::arrival, "arrival number: postponed queries are admitted in this order")
      .def_readonly("weighted_demand", &ClientStatus::weightedDemand, "bytes, m = Σ tᵢmᵢ / Σ tᵢ (paper §5)")
      .def_readonly("peak_demand", &ClientStatus::peakDemand, "bytes, max mᵢ")
      .def_readonly("budget_held", &ClientStatus::budgetHeld, "device bytes this process has backed")
      .def_readonly("observed_peak", &ClientStatus::observedPeak, "a query: most bytes its processes held at once")
      .def_property_readonly(
          "query_slot",
          [](const ClientStatus& c) {
            return c.querySlot < 0 ? std::nullopt : std::optional<std::int64_t>(c.querySlot);
          },
          "a memory client: the slot of the query it runs for")
      .def("as_dict", &clientDictionary)
      .def("__repr__", [](const ClientStatus& c) {
        return "<mqx.ClientStatus slot=" + std::to_string(c.slot) + " " + c.state + " pid=" + std::to_string(c.pid) +
               " name='" + c.name + "'>";
      });
  py::class_<NodeStatus>(m, "NodeStatus", "The node's shared state, copied under its lock.")
      .def_readonly("instance", &NodeStatus::instance)
      .def_readonly("segment", &NodeStatus::segment, "the shared-memory segment's name (under /dev/shm)")
      .def_readonly("daemon_pid", &NodeStatus::daemonPid)
      .def_readonly("capacity", &NodeStatus::capacity, "the node's device budget, bytes")
      .def_readonly("used", &NodeStatus::used, "bytes the live clients hold")
      .def_readonly("reclaimed_bytes", &NodeStatus::reclaimedBytes, "taken back from dead clients, total")
      .def_readonly("dead_clients", &NodeStatus::deadClients)
      .def_readonly("eviction_requests_served", &NodeStatus::evictionRequestsServed)
      .def_readonly("bytes_evicted_for_others", &NodeStatus::bytesEvictedForOthers)
      .def_readonly("clients", &NodeStatus::clients, "the records in use, by slot")
      .def("as_dict", &nodeDictionary, "Everything as plain dicts and lists (for JSON).")
      .def("__repr__", [](const NodeStatus& s) {
        return "<mqx.NodeStatus '" + s.segment + "' used=" + std::to_string(s.used) + "/" + std::to_string(s.capacity) +
               " clients=" + std::to_string(s.clients.size()) + ">";
      });
  m.def(
      "status",
      [](const std::optional<std::string>& instance, const std::optional<Config>& config) {
        const Config resolved = configFor(instance, config);
        py::gil_scoped_release released;
        return readNodeStatus(resolved.daemonInstance);
      },
      py::arg("instance") = py::none(), py::arg("config") = py::none(),
      R"doc(
The live state of the node of `instance` (default: the configuration's
daemon.instance, i.e. MQX_DAEMON_INSTANCE). Raises mqx.DaemonNotRunning when no
mqxd serves it, mqx.MqxError when another process keeps the node's lock
for more than 2 s.
)doc");
}

void bindClient(py::module_& m) {
  py::class_<QueryClient>(m, "Client", R"doc(
A query's membership of the node, as mqx-run has it (paper §5).

Creating it joins the node: the query arrives (its place in the admission
order) with its demand. Then request_admission() waits until mqxd admits it,
update_demand() reports a change while it runs, release() ends it. A context
manager: leaving the block releases the query.

    with mqx.Client("q1", weighted="600MiB", peak="1GiB") as query:
        query.request_admission(timeout=60)
        ...                                   # run the query
)doc")
      .def(py::init([](const std::string& name, const py::object& weighted, const py::object& peak,
                       const std::optional<std::string>& instance, const std::optional<Config>& config) {
             const Config resolved = configFor(instance, config);
             const auto weightedBytes = bytesOf(weighted, "weighted");
             const auto peakBytes = bytesOf(peak, "peak");
             py::gil_scoped_release released;
             return std::make_unique<QueryClient>(resolved, name, weightedBytes, peakBytes);
           }),
           py::arg("name") = "", py::arg("weighted") = 0, py::arg("peak") = 0, py::arg("instance") = py::none(),
           py::arg("config") = py::none(),
           "Joins the node of `instance` (default: the configuration's). Demands are bytes or size strings. "
           "Raises mqx.DaemonNotRunning when no mqxd serves it.")
      .def(
          "request_admission",
          [](QueryClient& client, const py::object& weighted, const py::object& peak, std::optional<double> timeout) {
            return client.requestAdmission(optionalBytes(weighted, "weighted"), optionalBytes(peak, "peak"), timeout);
          },
          py::arg("weighted") = py::none(), py::arg("peak") = py::none(), py::arg("timeout") = py::none(), R"doc(
Asks mqxd to admit the query (with these demands, else those given when
created) and waits; returns the seconds waited. Raises mqx.AdmissionTimeout
after `timeout` seconds and mqx.DaemonNotRunning when mqxd dies meanwhile;
both withdraw the query. Ctrl-C interrupts the wait.
)doc")
      .def(
          "update_demand",
          [](QueryClient& client, const py::object& weighted, const py::object& peak) {
            client.updateDemand(bytesOf(weighted, "weighted"), bytesOf(peak, "peak"));
          },
          py::arg("weighted"), py::arg("peak"),
          "The query's demand changed (bytes or size strings); mqxd re-runs admission with it.")
      .def("release", &QueryClient::release, "The query ended: mqxd admits the next. Leaves the node.")
      .def("close", &QueryClient::close, "Leaves the node without finishing (withdraws a waiting query).")
      .def_property_readonly("state", &QueryClient::state,
                             "'waiting', 'running', 'released', 'closed' or 'reclaimed' (mqxd took the record)")
      .def_property_readonly("slot", &QueryClient::slot, "the query's record in the segment")
      .def_property_readonly("name", &QueryClient::name)
      .def_property_readonly("instance", &QueryClient::instance)
      .def(
          "__enter__", [](QueryClient& client) -> QueryClient& { return client; }, py::return_value_policy::reference)
      .def("__exit__", [](QueryClient& client, const py::args&) { client.release(); })
      .def("__repr__", [](QueryClient& client) {
        return "<mqx.Client '" + client.name() + "' slot=" + std::to_string(client.slot()) + ">";
      });
}

void bindPlans(py::module_& m) {
#ifdef MQX_PYTHON_WITH_PLANS
  m.def(
      "load_plan",
      [](const std::string& path) {
        const auto plan = daemon::QueryPlan::load(path);
        return py::make_tuple(plan.name, plan.weightedDemand(), plan.peakDemand());
      },
      py::arg("path"),
      "A plan file's (name, weighted demand, peak demand), as mqx-run --plan reads it. Raises mqx.ConfigError.");
#endif
}

} // namespace

void bindDaemon(py::module_& m) {
  bindStatus(m);
  bindClient(m);
  bindPlans(m);
}

} // namespace mqx::python
