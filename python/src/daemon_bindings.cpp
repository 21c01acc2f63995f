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

std::optional<std::int64_t> querySlotOf(const ipc::ClientSnapshot& c) {
  return c.querySlot == ipc::kNoSlot ? std::nullopt : std::optional<std::int64_t>(c.querySlot);
}

std::optional<std::string> deviceOf(const ipc::ClientSnapshot& c) {
  return c.deviceIdentity.empty() ? std::nullopt : std::optional<std::string>(c.deviceIdentity);
}

py::dict deviceDictionary(const ipc::DeviceSnapshot& d) {
  py::dict out;
  out["index"] = d.index;
  out["identity"] = d.identity;
  out["capacity"] = d.capacity;
  out["used"] = d.usedBytes;
  out["running_queries"] = d.runningQueries;
  out["waiting_queries"] = d.waitingQueries;
  out["memory_clients"] = d.memoryClients;
  out["running_weighted_demand"] = d.runningWeightedDemand;
  return out;
}

py::dict activityDictionary(const ipc::ClientActivity& a) {
  py::dict d;
  d["bytes_to_device"] = a.bytesToDevice;
  d["bytes_to_host"] = a.bytesToHost;
  d["bytes_written_back"] = a.bytesWrittenBack;
  d["evictions"] = a.evictions;
  d["launches"] = a.launches;
  d["swap_used_bytes"] = a.swapUsedBytes;
  d["swap_reserved_bytes"] = a.swapReservedBytes;
  return d;
}

py::dict clientDictionary(const ipc::ClientSnapshot& c) {
  py::dict d;
  d["slot"] = c.slot;
  d["state"] = ipc::toString(c.state);
  d["pid"] = c.pid;
  d["name"] = c.name;
  d["arrival"] = c.arrival;
  d["weighted_demand"] = c.weightedDemand;
  d["peak_demand"] = c.peakDemand;
  d["budget_held"] = c.budgetHeld;
  d["observed_peak"] = c.observedPeak;
  d["query_slot"] = querySlotOf(c) ? py::object(py::int_(*querySlotOf(c))) : py::object(py::none());
  d["device"] = deviceOf(c) ? py::object(py::str(*deviceOf(c))) : py::object(py::none());
  d["blocked_on_memory"] = c.blockedOnMemory;
  d["activity"] = activityDictionary(c.activity);
  return d;
}

py::dict nodeDictionary(const NodeStatus& s) {
  py::dict d;
  d["instance"] = s.instance;
  d["segment"] = s.segment;
  d["daemon_pid"] = s.node.daemonPid;
  d["capacity"] = s.node.capacity;
  d["used"] = s.node.usedBytes;
  d["reclaimed_bytes"] = s.node.reclaimedBytes;
  d["dead_clients"] = s.node.deadClients;
  d["eviction_requests_served"] = s.node.evictionRequestsServed;
  d["bytes_evicted_for_others"] = s.node.bytesEvictedForOthers;
  d["activity"] = activityDictionary(s.node.activity);
  py::list devices;
  for (const auto& device : s.node.devices)
    devices.append(deviceDictionary(device));
  d["devices"] = devices;
  py::list clients;
  for (const auto& client : s.node.clients)
    clients.append(clientDictionary(client));
  d["clients"] = clients;
  return d;
}

// A read-only attribute of NodeStatus that is a field of its snapshot.
template <typename Field> auto nodeField(Field ipc::NodeSnapshot::*field) {
  return [field](const NodeStatus& s) { return s.node.*field; };
}

void bindStatus(py::module_& m) {
  py::class_<ipc::ClientActivity>(
      m, "ClientActivity",
      "What a memory client's manager did since it joined (counters: rates are differences of two samples) and "
      "its swap buffer's use now. A copy.")
      .def_readonly("bytes_to_device", &ipc::ClientActivity::bytesToDevice, "host -> device transfers, bytes")
      .def_readonly("bytes_to_host", &ipc::ClientActivity::bytesToHost,
                    "device -> host transfers (write-backs and reads), bytes")
      .def_readonly("bytes_written_back", &ipc::ClientActivity::bytesWrittenBack,
                    "dirty bytes saved to the swap buffer on eviction")
      .def_readonly("evictions", &ipc::ClientActivity::evictions, "eviction decisions (regions or pages)")
      .def_readonly("launches", &ipc::ClientActivity::launches, "kernel launches")
      .def_readonly("swap_used_bytes", &ipc::ClientActivity::swapUsedBytes, "swap-buffer bytes handed out now")
      .def_readonly("swap_reserved_bytes", &ipc::ClientActivity::swapReservedBytes,
                    "swap-buffer bytes held from the system now")
      .def("as_dict", &activityDictionary);
  py::class_<ipc::DeviceSnapshot>(m, "DeviceStatus", "One device of the node (a copy): its budget, use and queries.")
      .def_readonly("index", &ipc::DeviceSnapshot::index, "the device's index on the node")
      .def_readonly("identity", &ipc::DeviceSnapshot::identity,
                    "a GPU's UUID as nvidia-smi -L prints it, or 'sim-N' (the simulated device)")
      .def_readonly("capacity", &ipc::DeviceSnapshot::capacity, "the device's budget, bytes")
      .def_readonly("used", &ipc::DeviceSnapshot::usedBytes, "bytes the memory clients on it hold")
      .def_readonly("running_queries", &ipc::DeviceSnapshot::runningQueries, "admitted queries placed on it")
      .def_readonly("waiting_queries", &ipc::DeviceSnapshot::waitingQueries,
                    "waiting queries that asked for it (mqx-run --device)")
      .def_readonly("memory_clients", &ipc::DeviceSnapshot::memoryClients, "processes drawing on its budget")
      .def_readonly("running_weighted_demand", &ipc::DeviceSnapshot::runningWeightedDemand,
                    "sum of the weighted demands of the queries running on it, bytes")
      .def("as_dict", &deviceDictionary)
      .def("__repr__", [](const ipc::DeviceSnapshot& d) {
        return "<mqx.DeviceStatus " + std::to_string(d.index) + " '" + d.identity +
               "' used=" + std::to_string(d.usedBytes) + "/" + std::to_string(d.capacity) + ">";
      });
  py::class_<ipc::ClientSnapshot>(m, "ClientStatus", "One record of the node's segment (a copy).")
      .def_readonly("slot", &ipc::ClientSnapshot::slot, "the record's index")
      .def_property_readonly(
          "state", [](const ipc::ClientSnapshot& c) { return ipc::toString(c.state); },
          "'waiting' (a query before admission), 'running' (an admitted query), 'memory' (a process "
          "drawing on the node budget)")
      .def_readonly("pid", &ipc::ClientSnapshot::pid)
      .def_readonly("name", &ipc::ClientSnapshot::name)
      .def_readonly("arrival", &ipc::ClientSnapshot::arrival,
                    "arrival number: postponed queries are admitted in this order")
      .def_readonly("weighted_demand", &ipc::ClientSnapshot::weightedDemand, "bytes, m = Σ tᵢmᵢ / Σ tᵢ (paper §5)")
      .def_readonly("peak_demand", &ipc::ClientSnapshot::peakDemand, "bytes, max mᵢ")
      .def_readonly("budget_held", &ipc::ClientSnapshot::budgetHeld, "device bytes this process has backed")
      .def_readonly("observed_peak", &ipc::ClientSnapshot::observedPeak,
                    "a query: most bytes its processes held at once")
      .def_property_readonly("query_slot", &querySlotOf, "a memory client: the slot of the query it runs for")
      .def_property_readonly("device", &deviceOf,
                             "the device (a GPU UUID or 'sim-N') a memory client draws on or a query runs on (or "
                             "asked for); None for a query not placed yet")
      .def_readonly("blocked_on_memory", &ipc::ClientSnapshot::blockedOnMemory,
                    "a memory client waiting for others to free device memory")
      .def_readonly("activity", &ipc::ClientSnapshot::activity,
                    "a memory client's transfers, evictions and swap use (published every 100 ms; zero for queries)")
      .def("as_dict", &clientDictionary)
      .def("__repr__", [](const ipc::ClientSnapshot& c) {
        return "<mqx.ClientStatus slot=" + std::to_string(c.slot) + " " + ipc::toString(c.state) +
               " pid=" + std::to_string(c.pid) + " name='" + c.name + "'>";
      });
  py::class_<NodeStatus>(m, "NodeStatus", "The node's shared state, copied under its lock.")
      .def_readonly("instance", &NodeStatus::instance)
      .def_readonly("segment", &NodeStatus::segment, "the shared-memory segment's name (under /dev/shm)")
      .def_property_readonly("daemon_pid", nodeField(&ipc::NodeSnapshot::daemonPid))
      .def_property_readonly("capacity", nodeField(&ipc::NodeSnapshot::capacity),
                             "the node's device budget, bytes (of every device together)")
      .def_property_readonly("used", nodeField(&ipc::NodeSnapshot::usedBytes),
                             "bytes the live clients hold (on every device)")
      .def_property_readonly("devices", nodeField(&ipc::NodeSnapshot::devices),
                             "the node's devices (mqx.DeviceStatus), by index")
      .def_property_readonly("reclaimed_bytes", nodeField(&ipc::NodeSnapshot::reclaimedBytes),
                             "taken back from dead clients, total")
      .def_property_readonly("dead_clients", nodeField(&ipc::NodeSnapshot::deadClients))
      .def_property_readonly("eviction_requests_served", nodeField(&ipc::NodeSnapshot::evictionRequestsServed))
      .def_property_readonly("bytes_evicted_for_others", nodeField(&ipc::NodeSnapshot::bytesEvictedForOthers))
      .def_property_readonly("activity", nodeField(&ipc::NodeSnapshot::activity),
                             "the node's totals: counters of every memory client so far (those that left or died "
                             "included), swap use of the live ones")
      .def_property_readonly("clients", nodeField(&ipc::NodeSnapshot::clients), "the records in use, by slot")
      .def("as_dict", &nodeDictionary, "Everything as plain dicts and lists (for JSON).")
      .def("__repr__", [](const NodeStatus& s) {
        return "<mqx.NodeStatus '" + s.segment + "' used=" + std::to_string(s.node.usedBytes) + "/" +
               std::to_string(s.node.capacity) + " clients=" + std::to_string(s.node.clients.size()) + ">";
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
                       const std::optional<std::string>& instance, const std::optional<Config>& config,
                       const std::optional<std::string>& device) {
             const Config resolved = configFor(instance, config);
             const auto weightedBytes = bytesOf(weighted, "weighted");
             const auto peakBytes = bytesOf(peak, "peak");
             py::gil_scoped_release released;
             return std::make_unique<QueryClient>(resolved, name, weightedBytes, peakBytes, device.value_or(""));
           }),
           py::arg("name") = "", py::arg("weighted") = 0, py::arg("peak") = 0, py::arg("instance") = py::none(),
           py::arg("config") = py::none(), py::arg("device") = py::none(),
           "Joins the node of `instance` (default: the configuration's). Demands are bytes or size strings. "
           "`device` (a GPU UUID, 'sim-N' or the node's index N) asks for that device, as mqx-run --device; "
           "default: mqxd places the query (daemon.placement). Raises mqx.DaemonNotRunning when no mqxd serves "
           "it, mqx.MqxError when the node has no such device.")
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
      .def_property_readonly("device", &QueryClient::device,
                             "the device the admitted query runs on (a GPU UUID or 'sim-N'), else None")
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
