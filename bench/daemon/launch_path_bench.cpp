// mqx-launch-path-bench: what a kernel launch costs on the host when the
// process shares the node with mqxd (docs/daemon.md) against the same
// process alone, on the simulated device. With a node, every launch ticks
// the node's logical clock, publishes each referenced region's policy inputs
// (a seqlock write in the segment) and observes its footprint for the
// demand report; alone it does none of this. Every region stays resident
// (no eviction), so the difference is the publishing path. mqxd is started
// by the benchmark (a real process, its own daemon.instance).
//
//   mqx-launch-path-bench [--json PATH] [--launches N]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/node_membership.hpp"
#include "ipc/node_state.hpp"
#include "ipc/shared_segment.hpp"
#include "launch_path_report.hpp"

extern char** environ;

namespace {

constexpr int kRegions = 64;
constexpr int kMaxReferenced = 16;
constexpr int kRuns = 9;

// mqxd for the run: started with its own instance, stopped (SIGTERM) at the end.
class Daemon {
public:
  explicit Daemon(const std::string& instance) {
    setenv("MQX_DAEMON_INSTANCE", instance.c_str(), 1);
    setenv("MQX_DAEMON_CAPACITY", "1GiB", 1);
    setenv("MQX_LOG_LEVEL", "warn", 1);
    char* argv[] = {const_cast<char*>(MQXD_PATH), nullptr};
    if (posix_spawn(&pid_, MQXD_PATH, nullptr, nullptr, argv, environ) != 0) pid_ = -1;
    const auto names = mqx::ipc::IpcNames::forInstance(instance, getuid());
    for (int i = 0; i < 500 && pid_ > 0; ++i) {
      if (auto segment = mqx::ipc::SharedSegment::open(names); segment && segment->state().daemonPid == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::fprintf(stderr, "mqx-launch-path-bench: mqxd (%s) did not start\n", MQXD_PATH);
    std::exit(1);
  }
  ~Daemon() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

private:
  pid_t pid_ = -1;
};

// CPU time of the calling thread: the launch path's own work, not the time
// the (shared, busy) machine gave to other processes or to the simulated
// stream's thread that runs the kernels.
double threadCpuNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

// A process's manager with resident regions and a kernel over up to
// kMaxReferenced of them.
class LaunchBench {
public:
  // On the node of `membership`, or alone when it is null.
  LaunchBench(const mqx::Config& config, std::shared_ptr<mqx::ipc::NodeMembership> membership)
      : backend_(mqx::embedded::simBackendOptions(config)),
        onNode_(mqx::embedded::managerOptions(config), backend_, membership,
                membership
                    ? std::make_shared<mqx::ipc::AdmissionClient>(membership, mqx::embedded::admissionOptions(config))
                    : nullptr),
        manager_(onNode_.manager()) {
    std::vector<mqx::device::ParamInfo> layout;
    for (int i = 0; i < kMaxReferenced; ++i)
      layout.push_back({static_cast<std::size_t>(i) * 8, 8});
    kernel_ = backend_.registerKernel([](const mqx::device::SimKernelContext&, void**) {}, layout);
    regions_.resize(kRegions);
    for (auto& region : regions_)
      if (!mqx::ok(manager_.allocate(config.pageSize, &region))) std::exit(1);
    for (int first = 0; first < kRegions; first += kMaxReferenced) // everything resident
      launchOver(first, kMaxReferenced);
    if (!mqx::ok(manager_.synchronizeAll())) std::exit(1);
  }
  ~LaunchBench() {
    for (auto region : regions_)
      (void)manager_.free(region); // at exit: a failure changes no figure
  }
  // CPU nanoseconds per launch of a kernel referencing `referenced` regions.
  double measure(int referenced, int launches) {
    const double start = threadCpuNanoseconds();
    for (int i = 0; i < launches; ++i)
      launchOver(i * referenced, referenced);
    const double spent = threadCpuNanoseconds() - start;
    if (!mqx::ok(manager_.synchronizeAll())) std::exit(1);
    return spent / launches;
  }

private:
  void launchOver(int first, int count) {
    void* pointers[kMaxReferenced] = {};
    void* params[kMaxReferenced];
    for (int i = 0; i < kMaxReferenced; ++i) {
      if (i < count) pointers[i] = reinterpret_cast<void*>(regions_[(first + i) % kRegions]);
      params[i] = &pointers[i];
    }
    mqx::device::KernelLaunch launch;
    launch.function = kernel_;
    launch.params = params;
    if (!mqx::ok(manager_.launch(launch))) std::exit(1);
  }

  mqx::device::SimBackend backend_;
  mqx::ipc::ManagerOnNode onNode_;
  mqx::MemoryManager& manager_;
  mqx::FunctionHandle kernel_{};
  std::vector<mqx::DevicePtr> regions_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  std::string jsonPath;
  int launches = 20000;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--json" && i + 1 < argc)
      jsonPath = argv[++i];
    else if (argument == "--launches" && i + 1 < argc)
      launches = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: mqx-launch-path-bench [--json PATH] [--launches N]\n");
      return 2;
    }
  }
  mqx::Config config;
  config.simCapacity = std::size_t{1} << 30;
  config.simGranularity = std::size_t{1} << 20;
  config.pageSize = std::size_t{1} << 20;
  config.deviceMemoryLimit = std::size_t{1} << 30;
  config.daemonInstance = "bench" + std::to_string(getpid());
  Daemon daemon(config.daemonInstance);
  auto client = mqx::ipc::NodeMembership::connect(mqx::embedded::nodeOptions(config),
                                                  mqx::ipc::NodeMembership::Role::Memory, "launch-path-bench");
  if (client == nullptr) {
    std::fprintf(stderr, "mqx-launch-path-bench: cannot join the node\n");
    return 1;
  }

  mqx::bench::LaunchPathRun results{mqx::bench::thisRun(), launches, kRuns, kRegions, {}};
  std::printf("host launch path on the simulated device: CPU time of the launching thread, %d launches x %d runs "
              "(median), %d resident regions\n\n",
              launches, kRuns, kRegions);
  std::printf(
      "| regions per launch | alone CPU ns/launch | with mqxd CPU ns/launch | difference |\n|---|---|---|---|\n");
  LaunchBench alone(config, nullptr);
  LaunchBench member(config, client);
  for (int referenced : {1, 4, 16}) {
    // Alternating runs: drift of the machine's load falls on both alike.
    std::vector<double> aloneRuns, nodeRuns;
    for (int run = 0; run < kRuns; ++run) {
      aloneRuns.push_back(alone.measure(referenced, launches));
      nodeRuns.push_back(member.measure(referenced, launches));
    }
    results.rows.push_back({referenced, median(aloneRuns), median(nodeRuns)});
    const double aloneNs = results.rows.back().aloneNanoseconds;
    const double nodeNs = results.rows.back().withDaemonNanoseconds;
    std::printf("| %d | %.0f | %.0f | %+.0f ns (%+.1f%%) |\n", referenced, aloneNs, nodeNs, nodeNs - aloneNs,
                100.0 * (nodeNs - aloneNs) / aloneNs);
    std::fflush(stdout);
  }
  client->leave();
  if (!jsonPath.empty()) {
    if (!mqx::bench::writeJsonFile(jsonPath, mqx::bench::launchPathJson(results))) return 1;
    std::printf("\nresults written to %s\n", jsonPath.c_str());
  }
  return 0;
}
