// mqx_fault_client: a query process on the simulated device for the fault
// suite. Like tests/daemon's mqx_sim_client it joins the node of
// MQX_DAEMON_INSTANCE and checks every byte against a host reference, and
// it can inject a fault into itself:
//
//   work R BYTES ROUNDS SEED PEERS [FAULT [N]]
//       R regions of BYTES, ROUNDS in-place transform passes over each, all
//       data checked at the end. FAULT: none; kill-copy-to-host N (SIGKILL
//       inside the Nth copy to the host: an eviction's write-back);
//       kill-copy-to-device N (inside the Nth load); kill-serving-eviction
//       (SIGKILL while evicting for another process); fail-pinned (every
//       pinned host allocation refused).
//   fill-swap BYTES
//       allocates regions of BYTES until the device budget plus the swap
//       buffer are full (an allocation fails with OutOfMemory), runs a
//       kernel over every region (evicting into the swap buffer; a launch
//       that finds no room is refused with OutOfMemory and prints
//       "launches refused yes"), checks every byte.
//
// Prints "ok" and counters on success. Exit 0 correct, 1 wrong data, 4 a
// call failed, 3 no daemon, 2 bad arguments.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/node_membership.hpp"

namespace {

using mqx::Status;

void transformReference(std::uint8_t* data, std::uint64_t n, std::uint8_t seed) {
  for (std::uint64_t i = 0; i < n; ++i)
    data[i] = static_cast<std::uint8_t>(data[i] * 3 + seed);
}

struct Process {
  mqx::device::SimBackend backend;
  mqx::FunctionHandle transform = 0;
  std::unique_ptr<mqx::ipc::ManagerOnNode> onNode;
  mqx::MemoryManager* manager = nullptr;
  mqx::ipc::NodeMembership& client;

  Process(const mqx::Config& config, const std::shared_ptr<mqx::ipc::NodeMembership>& member, bool killServingEviction)
      : backend(mqx::embedded::simBackendOptions(config)), client(*member) {
    transform = backend.registerKernel(
        [](const mqx::device::SimKernelContext&, void** params) {
          transformReference(*static_cast<std::uint8_t**>(params[0]), *static_cast<std::uint64_t*>(params[1]),
                             *static_cast<std::uint8_t*>(params[2]));
        },
        {{0, 8}, {8, 8}, {16, 1}});
    onNode = std::make_unique<mqx::ipc::ManagerOnNode>(
        mqx::embedded::managerOptions(config), backend, member,
        std::make_shared<mqx::ipc::AdmissionClient>(member, mqx::embedded::admissionOptions(config)));
    manager = &onNode->manager();
    mqx::hook::registerHostMemoryManager(manager);
    // The fault: killed as it starts to evict for another process.
    if (killServingEviction)
      client.setEvictor([](std::size_t, std::uint64_t) -> std::size_t {
        ::raise(SIGKILL);
        return 0;
      });
  }
  ~Process() {
    onNode->detach();
    mqx::hook::registerHostMemoryManager(nullptr);
  }
  Status launch(mqx::DevicePtr address, std::uint64_t bytes, std::uint8_t seed) {
    void* pointer = reinterpret_cast<void*>(address);
    void* params[] = {&pointer, &bytes, &seed};
    mqx::device::KernelLaunch launch;
    launch.function = transform;
    launch.params = params;
    return manager->launch(launch);
  }
};

void waitForPeers(mqx::ipc::NodeMembership& client, unsigned peers) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      mqx::ipc::RobustLock lock(client.node().lock);
      if (client.node().nextArrival - 1 >= peers) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int fail(const char* what, Status status) {
  std::fprintf(stderr, "fault_client %d: %s failed: %s\n", getpid(), what, std::string(mqx::toString(status)).c_str());
  return 4;
}

std::vector<std::uint8_t> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::uint8_t> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<std::uint8_t>(seed * 13 + i * 7 + i / 4099);
  return data;
}

int work(Process& process, int regions, std::size_t bytes, int rounds, unsigned seed, unsigned peers) {
  auto& manager = *process.manager;
  std::vector<mqx::DevicePtr> addresses(regions);
  std::vector<std::vector<std::uint8_t>> reference;
  for (int r = 0; r < regions; ++r) {
    reference.push_back(pattern(bytes, seed + r * 31));
    if (Status s = manager.allocate(bytes, &addresses[r]); !mqx::ok(s)) return fail("allocate", s);
    if (Status s = manager.copyHostToDevice(addresses[r], reference[r].data(), bytes, 0, true); !mqx::ok(s))
      return fail("copy to device", s);
  }
  waitForPeers(process.client, peers);
  for (int round = 0; round < rounds; ++round) {
    for (int r = 0; r < regions; ++r) {
      const auto k = static_cast<std::uint8_t>(seed + round * 5 + r);
      if (Status s = process.launch(addresses[r], bytes, k); !mqx::ok(s)) return fail("launch", s);
      transformReference(reference[r].data(), bytes, k);
    }
  }
  for (int r = 0; r < regions; ++r) {
    std::vector<std::uint8_t> back(bytes);
    if (Status s = manager.copyDeviceToHost(back.data(), addresses[r], bytes, 0, true); !mqx::ok(s))
      return fail("copy to host", s);
    if (back != reference[r]) {
      std::fprintf(stderr, "fault_client %d: region %d holds wrong data\n", getpid(), r);
      return 1;
    }
  }
  for (auto address : addresses)
    if (Status s = manager.free(address); !mqx::ok(s)) return fail("free", s);
  return 0;
}

int fillSwap(Process& process, std::size_t bytes) {
  auto& manager = *process.manager;
  std::vector<mqx::DevicePtr> addresses;
  std::vector<std::vector<std::uint8_t>> reference;
  Status refused = Status::Success;
  for (unsigned r = 0; r < 4096; ++r) {
    mqx::DevicePtr address = 0;
    refused = manager.allocate(bytes, &address);
    if (!mqx::ok(refused)) break;
    reference.push_back(pattern(bytes, r));
    addresses.push_back(address);
    if (Status s = manager.copyHostToDevice(address, reference.back().data(), bytes, 0, true); !mqx::ok(s))
      return fail("copy to device", s);
  }
  if (refused != Status::OutOfMemory) return fail("allocation past budget + swap (expected OutOfMemory)", refused);
  // With device and swap full, a launch that has to evict dirty data may be
  // refused with OutOfMemory; then its kernel did not run, and nothing of
  // any region may be lost.
  std::size_t refusedLaunches = 0;
  for (std::size_t r = 0; r < addresses.size(); ++r) {
    const Status s = process.launch(addresses[r], bytes, 1);
    if (s == Status::OutOfMemory) {
      ++refusedLaunches;
      continue;
    }
    if (!mqx::ok(s)) return fail("launch", s);
    transformReference(reference[r].data(), bytes, 1);
  }
  for (std::size_t r = 0; r < addresses.size(); ++r) {
    std::vector<std::uint8_t> back(bytes);
    if (Status s = manager.copyDeviceToHost(back.data(), addresses[r], bytes, 0, true); !mqx::ok(s))
      return fail("copy to host", s);
    if (back != reference[r]) {
      std::fprintf(stderr, "fault_client %d: region %zu holds wrong data\n", getpid(), r);
      return 1;
    }
  }
  std::printf("launches refused %s\n", refusedLaunches > 0 ? "yes" : "no");
  for (auto address : addresses)
    if (Status s = manager.free(address); !mqx::ok(s)) return fail("free", s);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mqx_fault_client work R BYTES ROUNDS SEED PEERS [FAULT [N]] | fill-swap BYTES\n");
    return 2;
  }
  try {
    const mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    auto client = mqx::ipc::NodeMembership::connect(mqx::embedded::nodeOptions(config),
                                                    mqx::ipc::NodeMembership::Role::Memory, "fault_client");
    if (client == nullptr) {
      std::fprintf(stderr, "fault_client: no daemon\n");
      return 3;
    }
    const std::string mode = argv[1];
    const std::string fault = mode == "work" && argc >= 8 ? argv[7] : "none";
    const std::uint64_t at = argc >= 9 ? std::strtoull(argv[8], nullptr, 10) : 0;
    mqx::device::SimFaults faults;
    faults.failHostAllocations = fault == "fail-pinned";
    faults.killAtCopyToHost = fault == "kill-copy-to-host" ? at : 0;
    faults.killAtCopyToDevice = fault == "kill-copy-to-device" ? at : 0;
    int result = 2;
    std::uint64_t evictions = 0, refused = 0;
    {
      Process process(config, client, fault == "kill-serving-eviction");
      process.backend.injectFaults(faults);
      if (mode == "work" && argc >= 7)
        result = work(process, std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                      static_cast<unsigned>(std::atoi(argv[5])), static_cast<unsigned>(std::atoi(argv[6])));
      else if (mode == "fill-swap")
        result = fillSwap(process, std::strtoull(argv[2], nullptr, 10));
      else
        std::fprintf(stderr, "fault_client: bad arguments\n");
      evictions = process.manager->statistics().evictions;
      refused = process.backend.hostAllocationsRefused();
    }
    // Yes/no lines, so that a test can wait for them as whole lines.
    if (result == 0)
      std::printf("ok\nevicted %s\npinned-refused %s\n", evictions > 0 ? "yes" : "no", refused > 0 ? "yes" : "no");
    std::fflush(stdout);
    return result;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fault_client: %s\n", error.what());
    return 5;
  }
}
