// mqx_sim_client: a query process on the simulated device for the daemon
// tests. It joins the node that mqxd runs (MQX_DAEMON_INSTANCE) and draws its
// device memory from the node budget, as libmqx.so does in a GPU process.
//
//   work R BYTES ROUNDS SEED [PEERS]
//                             R regions of BYTES, ROUNDS passes of an in-place
//                             transform kernel over each, then checks every
//                             byte against a host reference. Exit 0 correct,
//                             1 wrong data, 4 a call failed (out of memory).
//                             Prints its counters last ("evictions N", ...,
//                             "bytes to device N", "launches N"): what the
//                             node's totals hold for it once it left.
//                             With PEERS, the passes start once PEERS clients
//                             have joined the node, so that they all compete.
//   work-hold R BYTES ROUNDS SEED MS
//                             work's passes, then prints "ready" and keeps
//                             its data MS milliseconds before the check
//                             (its activity is published meanwhile).
//   cold BYTES MS SEED        one region of BYTES, read once by a kernel
//                             (cudaAdvice input: it stays clean), prints
//                             "ready", keeps it MS milliseconds (serving
//                             eviction requests), then checks it as work does.
//   hold-budget BYTES MS      takes BYTES of the budget, prints "held", keeps
//                             them MS milliseconds (0: until killed), exits.
//   hold-lock BYTES           takes BYTES, then the node lock, prints
//                             "locked" and waits to be killed.
//   launch-set KEPT BYTES IDLE NEW_BYTES SEED
//                             KEPT regions of BYTES and IDLE regions of BYTES
//                             are made resident (one transform kernel each),
//                             "loaded" is printed, and it waits for SIGUSR1
//                             (the test's barrier); then ONE kernel transforms
//                             the KEPT regions and a new region of NEW_BYTES
//                             together (all of them resident at once), and
//                             every region is checked as in work. Also prints
//                             "yield evictions BYTES": what it evicted for
//                             others while its launch yielded.
//   footprints INTERVAL_MS HOLD_MS BYTES:MS...
//                             phases: for MS milliseconds, a kernel over one
//                             region of BYTES every INTERVAL_MS (the region
//                             is freed after its phase); prints "phase N" as
//                             each starts and "finished" after the last, keeps
//                             running HOLD_MS, exits (the observed-demand
//                             path: AdmissionClient::observeLaunchFootprint).
//   update-demand WEIGHTED PEAK BEFORE_MS AFTER_MS
//                             sleeps BEFORE_MS, sends the query's new demand
//                             (AdmissionClient::updateDemand), prints "updated",
//                             sleeps AFTER_MS, exits (6: nothing to update).
//   gate COMMAND [ARGS...]    a program started before its query's admission
//                             (mqx-run's default) whose first act is a CUDA
//                             call: waits at the admission gate as libmqx.so's
//                             cuInit does (ipc::passAdmissionGate), then runs
//                             COMMAND with the placed device exported; exit 5
//                             when the query is not admitted.
// Exit 3: no daemon.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/query_admission_gate.hpp"
#include "ipc/shared_device_budget.hpp"

namespace {

using mqx::Status;

// The node as this process joined it: its membership, and the admission
// client of the query it runs for (its demand).
struct Node {
  std::shared_ptr<mqx::ipc::NodeMembership> membership;
  std::shared_ptr<mqx::ipc::AdmissionClient> admission;
  std::shared_ptr<mqx::DeviceBudget> budget() const {
    return std::make_shared<mqx::ipc::SharedDeviceBudget>(membership, admission);
  }
};

void transformReference(std::uint8_t* data, std::uint64_t n, std::uint8_t seed) {
  for (std::uint64_t i = 0; i < n; ++i)
    data[i] = static_cast<std::uint8_t>(data[i] * 3 + seed);
}

// Waits until PEERS clients joined this (fresh) node. Counted by arrivals,
// which only grow: a fast peer that already finished and left still counts.
void waitForPeers(mqx::ipc::NodeMembership& client, unsigned peers) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::uint64_t arrivals = 0;
    {
      mqx::ipc::RobustLock lock(client.node().lock);
      arrivals = client.node().nextArrival - 1;
    }
    if (arrivals >= peers) return;
    // Short: the peers start their passes within microseconds of each other.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::fprintf(stderr, "sim_client %d: only some of %u peers joined\n", getpid(), peers);
}

struct WorkOptions {
  int regions = 1;
  std::size_t bytes = 0;
  int rounds = 1;
  unsigned seed = 0;
  unsigned peers = 0;
  bool readOnly = false;     // a kernel that only reads (cudaAdvice input): the data stays clean
  long holdMilliseconds = 0; // after the passes: prints "ready" and keeps the data this long
};

int work(const mqx::Config& config, const Node& client, const WorkOptions& options) {
  const int regions = options.regions;
  const std::size_t bytes = options.bytes;
  const int rounds = options.rounds;
  const unsigned seed = options.seed;
  mqx::device::SimBackend backend(mqx::embedded::simBackendOptions(config));
  const mqx::FunctionHandle readAll = backend.registerKernel(
      [](const mqx::device::SimKernelContext&, void** params) {
        const auto* data = *static_cast<const std::uint8_t**>(params[0]);
        auto n = *static_cast<std::uint64_t*>(params[1]);
        std::uint64_t sum = 0;
        for (std::uint64_t i = 0; i < n; ++i)
          sum += data[i];
        volatile std::uint64_t sink = sum; // read everything, write nothing
        (void)sink;
      },
      {{0, 8}, {8, 8}});
  const mqx::FunctionHandle transform = backend.registerKernel(
      [](const mqx::device::SimKernelContext&, void** params) {
        auto* data = *static_cast<std::uint8_t**>(params[0]);
        auto n = *static_cast<std::uint64_t*>(params[1]);
        auto s = *static_cast<std::uint8_t*>(params[2]);
        transformReference(data, n, s);
      },
      {{0, 8}, {8, 8}, {16, 1}});
  mqx::ipc::ManagerOnNode onNode(mqx::embedded::managerOptions(config), backend, client.membership, client.admission);
  mqx::MemoryManager* manager = &onNode.manager();
  // Copy-on-write faults of lazily copied host buffers go to the manager, as
  // in libmqx.so.
  mqx::hook::registerHostMemoryManager(manager);
  int result = 0;
  auto fail = [&](const char* what, Status status) {
    std::fprintf(stderr, "sim_client %d: %s failed: %s\n", getpid(), what, std::string(mqx::toString(status)).c_str());
    result = 4;
  };
  std::vector<mqx::DevicePtr> addresses(regions);
  std::vector<std::vector<std::uint8_t>> reference(regions, std::vector<std::uint8_t>(bytes));
  for (int r = 0; r < regions && result == 0; ++r) {
    for (std::size_t i = 0; i < bytes; ++i)
      reference[r][i] = static_cast<std::uint8_t>(seed + r * 31 + i * 7 + i / 4099);
    if (Status s = manager->allocate(bytes, &addresses[r]); !mqx::ok(s))
      fail("allocate", s);
    else if (Status s2 = manager->copyHostToDevice(addresses[r], reference[r].data(), bytes, 0, true); !mqx::ok(s2))
      fail("copy to device", s2);
  }
  waitForPeers(*client.membership, options.peers);
  for (int round = 0; round < rounds && result == 0; ++round) {
    for (int r = 0; r < regions && result == 0; ++r) {
      void* pointer = reinterpret_cast<void*>(addresses[r]);
      std::uint64_t n = bytes;
      auto k = static_cast<std::uint8_t>(seed + round * 5 + r);
      void* params[] = {&pointer, &n, &k};
      mqx::device::KernelLaunch launch;
      launch.function = options.readOnly ? readAll : transform;
      launch.params = params;
      if (options.readOnly)
        if (Status s = manager->advise(addresses[r], mqx::Access::Input); !mqx::ok(s)) fail("advise", s);
      if (Status s = manager->launch(launch); !mqx::ok(s))
        fail("launch", s);
      else if (!options.readOnly)
        transformReference(reference[r].data(), n, k);
    }
  }
  if (options.holdMilliseconds > 0 && result == 0) {
    std::printf("ready\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(options.holdMilliseconds));
  }
  for (int r = 0; r < regions && result == 0; ++r) {
    std::vector<std::uint8_t> back(bytes);
    if (Status s = manager->copyDeviceToHost(back.data(), addresses[r], bytes, 0, true); !mqx::ok(s)) {
      fail("copy to host", s);
    } else if (back != reference[r]) {
      std::fprintf(stderr, "sim_client %d: region %d holds wrong data\n", getpid(), r);
      result = 1;
    }
  }
  // Before the manager goes; the source's last counters reach the record
  // now, and nothing changes them after: the totals the node keeps once
  // this client leaves are exactly the counters printed here.
  onNode.detach();
  const auto stats = manager->statistics();
  std::printf("%s\nevictions %llu\npeer evictions %llu\nyields %llu\n", result == 0 ? "ok" : "failed",
              static_cast<unsigned long long>(stats.evictions), static_cast<unsigned long long>(stats.peerEvictions),
              static_cast<unsigned long long>(stats.launchYields));
  std::printf("bytes to device %llu\nbytes to host %llu\nbytes written back %llu\nlaunches %llu\n",
              static_cast<unsigned long long>(stats.bytesToDevice), static_cast<unsigned long long>(stats.bytesToHost),
              static_cast<unsigned long long>(stats.bytesWrittenBack), static_cast<unsigned long long>(stats.launches));
  const auto usage = manager->tryUsage(); // nothing else holds the manager now
  std::printf("lent host block bytes %llu\n", static_cast<unsigned long long>(usage ? usage->swapLentBytes : 0));
  std::printf("evictions beside loads %llu\n", static_cast<unsigned long long>(stats.evictionsBesideLoads));
  std::fflush(stdout);
  for (auto address : addresses)
    if (address != 0)
      if (Status s = manager->free(address); !mqx::ok(s)) fail("free", s);
  mqx::hook::registerHostMemoryManager(nullptr);
  return result;
}

// A kernel over up to kSetSize regions at once: parameters p0..p3, n0..n3,
// seed (a null pointer is no region).
constexpr int kSetSize = 4;

int launchSet(const mqx::Config& config, const Node& client, int kept, std::size_t bytes, int idle,
              std::size_t newBytes, unsigned seed) {
  if (kept < 1 || kept + 1 > kSetSize || idle < 0 || bytes == 0 || newBytes == 0) return 2;
  mqx::device::SimBackend backend(mqx::embedded::simBackendOptions(config));
  std::vector<mqx::device::ParamInfo> layout;
  for (std::size_t i = 0; i < 2 * kSetSize + 1; ++i)
    layout.push_back({i * 8, i < 2 * kSetSize ? 8u : 1u});
  const mqx::FunctionHandle transformSet = backend.registerKernel(
      [](const mqx::device::SimKernelContext&, void** params) {
        const auto s = *static_cast<std::uint8_t*>(params[2 * kSetSize]);
        for (int i = 0; i < kSetSize; ++i) {
          auto* data = *static_cast<std::uint8_t**>(params[i]);
          if (data != nullptr) transformReference(data, *static_cast<std::uint64_t*>(params[kSetSize + i]), s);
        }
      },
      layout);
  mqx::ipc::ManagerOnNode onNode(mqx::embedded::managerOptions(config), backend, client.membership, client.admission);
  mqx::MemoryManager* manager = &onNode.manager();
  mqx::hook::registerHostMemoryManager(manager);
  // Regions: kept first, then idle, then the new one.
  const int count = kept + idle + 1;
  std::vector<std::size_t> sizes(count, bytes);
  sizes.back() = newBytes;
  std::vector<mqx::DevicePtr> addresses(count);
  std::vector<std::vector<std::uint8_t>> reference(count);
  int result = 0;
  auto fail = [&](const char* what, Status status) {
    std::fprintf(stderr, "sim_client %d: %s failed: %s\n", getpid(), what, std::string(mqx::toString(status)).c_str());
    result = 4;
  };
  // One kernel over `regions` (indexes into addresses), mirrored on the host.
  auto launchOver = [&](const std::vector<int>& regions, std::uint8_t k) {
    void* pointers[kSetSize] = {};
    std::uint64_t lengths[kSetSize] = {};
    for (std::size_t i = 0; i < regions.size(); ++i) {
      pointers[i] = reinterpret_cast<void*>(addresses[regions[i]]);
      lengths[i] = sizes[regions[i]];
    }
    void* params[2 * kSetSize + 1];
    for (int i = 0; i < kSetSize; ++i) {
      params[i] = &pointers[i];
      params[kSetSize + i] = &lengths[i];
    }
    params[2 * kSetSize] = &k;
    mqx::device::KernelLaunch launch;
    launch.function = transformSet;
    launch.params = params;
    if (Status s = manager->launch(launch); !mqx::ok(s)) return fail("launch", s);
    for (int r : regions)
      transformReference(reference[r].data(), sizes[r], k);
  };
  for (int r = 0; r < count && result == 0; ++r) {
    reference[r].resize(sizes[r]);
    for (std::size_t i = 0; i < sizes[r]; ++i)
      reference[r][i] = static_cast<std::uint8_t>(seed + r * 31 + i * 7 + i / 4099);
    if (Status s = manager->allocate(sizes[r], &addresses[r]); !mqx::ok(s))
      fail("allocate", s);
    else if (Status s2 = manager->copyHostToDevice(addresses[r], reference[r].data(), sizes[r], 0, true); !mqx::ok(s2))
      fail("copy to device", s2);
  }
  for (int r = 0; r < kept + idle && result == 0; ++r)
    launchOver({r}, static_cast<std::uint8_t>(seed + r));
  if (Status s = manager->synchronizeAll(); !mqx::ok(s)) fail("synchronize", s);
  std::printf("loaded\n");
  std::fflush(stdout);
  sigset_t go;
  sigemptyset(&go);
  sigaddset(&go, SIGUSR1);
  int received = 0;
  sigwait(&go, &received);
  std::vector<int> set;
  for (int r = 0; r < kept; ++r)
    set.push_back(r);
  set.push_back(count - 1);
  if (result == 0) launchOver(set, static_cast<std::uint8_t>(seed + 101));
  for (int r = 0; r < count && result == 0; ++r) {
    std::vector<std::uint8_t> back(sizes[r]);
    if (Status s = manager->copyDeviceToHost(back.data(), addresses[r], sizes[r], 0, true); !mqx::ok(s)) {
      fail("copy to host", s);
    } else if (back != reference[r]) {
      std::fprintf(stderr, "sim_client %d: region %d holds wrong data\n", getpid(), r);
      result = 1;
    }
  }
  const auto stats = manager->statistics();
  std::printf("%s\nevictions %llu\npeer evictions %llu\nyields %llu\nyield evictions %llu\n",
              result == 0 ? "ok" : "failed", static_cast<unsigned long long>(stats.evictions),
              static_cast<unsigned long long>(stats.peerEvictions), static_cast<unsigned long long>(stats.launchYields),
              static_cast<unsigned long long>(stats.bytesEvictedWhileYielding));
  std::fflush(stdout);
  onNode.detach();
  for (auto address : addresses)
    if (address != 0)
      if (Status s = manager->free(address); !mqx::ok(s)) fail("free", s);
  mqx::hook::registerHostMemoryManager(nullptr);
  return result;
}

int footprints(const mqx::Config& config, const Node& client, long intervalMs, long holdMs,
               const std::vector<std::pair<std::size_t, long>>& phases) {
  mqx::device::SimBackend backend(mqx::embedded::simBackendOptions(config));
  const mqx::FunctionHandle transform = backend.registerKernel(
      [](const mqx::device::SimKernelContext&, void** params) {
        transformReference(*static_cast<std::uint8_t**>(params[0]), *static_cast<std::uint64_t*>(params[1]), 1);
      },
      {{0, 8}, {8, 8}});
  mqx::ipc::ManagerOnNode onNode(mqx::embedded::managerOptions(config), backend, client.membership, client.admission);
  mqx::MemoryManager* manager = &onNode.manager();
  int result = 0;
  for (std::size_t phase = 0; phase < phases.size() && result == 0; ++phase) {
    const auto [bytes, milliseconds] = phases[phase];
    std::printf("phase %zu\n", phase + 1);
    std::fflush(stdout);
    mqx::DevicePtr address = 0;
    if (Status s = manager->allocate(bytes, &address); !mqx::ok(s)) {
      std::fprintf(stderr, "sim_client %d: allocate failed: %s\n", getpid(), std::string(mqx::toString(s)).c_str());
      result = 4;
      break;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
    while (std::chrono::steady_clock::now() < end && result == 0) {
      void* pointer = reinterpret_cast<void*>(address);
      std::uint64_t n = bytes;
      void* params[] = {&pointer, &n};
      mqx::device::KernelLaunch launch;
      launch.function = transform;
      launch.params = params;
      if (Status s = manager->launch(launch); !mqx::ok(s)) {
        std::fprintf(stderr, "sim_client %d: launch failed: %s\n", getpid(), std::string(mqx::toString(s)).c_str());
        result = 4;
      }
      // Each kernel ends before the next: the phase's length is its kernels' time.
      if (Status s = manager->synchronizeAll(); !mqx::ok(s)) {
        std::fprintf(stderr, "sim_client %d: synchronize failed: %s\n", getpid(),
                     std::string(mqx::toString(s)).c_str());
        result = 4;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(intervalMs));
    }
    if (Status s = manager->free(address); !mqx::ok(s)) {
      std::fprintf(stderr, "sim_client %d: free failed: %s\n", getpid(), std::string(mqx::toString(s)).c_str());
      result = 4;
    }
  }
  std::printf("%s\n", result == 0 ? "finished" : "failed");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(holdMs));
  onNode.detach();
  return result;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: mqx_sim_client work R BYTES ROUNDS SEED [PEERS] | cold BYTES MS SEED | hold-budget "
        "BYTES MS | hold-lock BYTES | launch-set KEPT BYTES IDLE NEW_BYTES SEED | footprints INTERVAL_MS HOLD_MS "
        "BYTES:MS... | leave-at-exit | update-demand "
        "WEIGHTED PEAK BEFORE_MS AFTER_MS | gate COMMAND [ARGS...]\n");
    return 2;
  }
  try {
    // launch-set's barrier: SIGUSR1 blocked in every thread (the eviction
    // server's too), taken by sigwait.
    sigset_t go;
    sigemptyset(&go);
    sigaddset(&go, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &go, nullptr);
    const mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    if (std::strcmp(argv[1], "gate") == 0 && argc >= 3) {
      const auto gate = mqx::ipc::passAdmissionGate(config.daemonInstance);
      if (!gate.admitted) {
        std::fprintf(stderr, "sim_client: not admitted: %s\n", gate.refusal.c_str());
        return 5;
      }
      execvp(argv[2], argv + 2);
      std::perror("sim_client: gate: exec");
      return 127;
    }
    Node node;
    node.membership = mqx::ipc::NodeMembership::connect(mqx::embedded::simNodeOptions(config),
                                                        mqx::ipc::NodeMembership::Role::Memory, "sim_client");
    if (node.membership == nullptr) {
      std::fprintf(stderr, "sim_client: no daemon\n");
      return 3;
    }
    node.admission =
        std::make_shared<mqx::ipc::AdmissionClient>(node.membership, mqx::embedded::admissionOptions(config));
    auto& client = node.membership;
    const std::string mode = argv[1];
    if (mode == "leave-at-exit" && argc == 2) {
      // As libmqx.so does: the client object lives until the process ends and
      // is never destroyed; leave() at exit is all that runs.
      std::printf("joined\n");
      std::fflush(stdout);
      client->leave();
      std::_Exit(0);
    }
    if (mode == "work" && (argc == 6 || argc == 7)) {
      WorkOptions options{std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                          static_cast<unsigned>(std::atoi(argv[5])),
                          argc == 7 ? static_cast<unsigned>(std::atoi(argv[6])) : 0};
      return work(config, node, options);
    }
    if (mode == "work-hold" && argc == 7) {
      WorkOptions options{std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                          static_cast<unsigned>(std::atoi(argv[5]))};
      options.holdMilliseconds = std::atol(argv[6]);
      return work(config, node, options);
    }
    if (mode == "cold" && argc == 5) {
      WorkOptions options{1, std::strtoull(argv[2], nullptr, 10), 1, static_cast<unsigned>(std::atoi(argv[4]))};
      options.readOnly = true;
      options.holdMilliseconds = std::atol(argv[3]);
      return work(config, node, options);
    }
    if (mode == "launch-set" && argc == 7)
      return launchSet(config, node, std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                       std::strtoull(argv[5], nullptr, 10), static_cast<unsigned>(std::atoi(argv[6])));
    if (mode == "footprints" && argc >= 5) {
      std::vector<std::pair<std::size_t, long>> phases;
      for (int i = 4; i < argc; ++i) {
        char* end = nullptr;
        const std::size_t bytes = std::strtoull(argv[i], &end, 10);
        if (*end != ':' || bytes == 0) return 2;
        phases.emplace_back(bytes, std::atol(end + 1));
      }
      return footprints(config, node, std::atol(argv[2]), std::atol(argv[3]), phases);
    }
    if (mode == "update-demand" && argc == 6) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(argv[4])));
      if (!node.admission->updateDemand(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10)))
        return 6;
      std::printf("updated\n");
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(argv[5])));
      return 0;
    }
    if ((mode == "hold-budget" && argc == 4) || (mode == "hold-lock" && argc == 3)) {
      const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
      if (!node.budget()->tryAcquire(bytes)) {
        std::fprintf(stderr, "sim_client: cannot take %zu bytes\n", bytes);
        return 4;
      }
      if (mode == "hold-lock") {
        client->node().lock.lock(); // never unlocked: the test kills us here
        std::printf("locked\n");
        std::fflush(stdout);
        for (;;)
          pause();
      }
      std::printf("held\n");
      std::fflush(stdout);
      const long ms = std::atol(argv[3]);
      if (ms == 0)
        for (;;)
          pause();
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      node.budget()->release(bytes);
      return 0;
    }
    std::fprintf(stderr, "sim_client: bad arguments\n");
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sim_client: %s\n", error.what());
    return 5;
  }
}
