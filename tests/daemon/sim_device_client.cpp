// mqx_sim_device_client: a process whose runtime is a SimDevice
// (libmqx/embedded), for the daemon tests of what SimDevice assembles. It
// joins the node of MQX_DAEMON_INSTANCE through SimDevice and
//
//   two-regions BYTES         allocates two regions of BYTES, runs a kernel
//                             over the first and then over the second (the
//                             second is the more recently used), prints
//                             "ready" and serves the node's eviction
//                             requests until it is terminated.
//
// Exit 0 on SIGTERM, 3 no daemon, 4 a call failed, 2 bad arguments.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config.hpp"
#include "embedded/sim_device.hpp"

namespace {

int twoRegions(mqx::embedded::SimDevice& device, std::size_t bytes) {
  const mqx::FunctionHandle fill = device.backend().registerKernel(
      [](const mqx::device::SimKernelContext&, void** params) {
        auto* data = *static_cast<std::uint8_t**>(params[0]);
        const auto n = *static_cast<std::uint64_t*>(params[1]);
        for (std::uint64_t i = 0; i < n; ++i)
          data[i] = static_cast<std::uint8_t>(i);
      },
      {{0, 8}, {8, 8}});
  mqx::MemoryManager& manager = device.manager();
  for (int region = 0; region < 2; ++region) {
    mqx::DevicePtr address = 0;
    if (manager.allocate(bytes, &address) != mqx::Status::Success) return 4;
    void* pointer = reinterpret_cast<void*>(address);
    std::uint64_t n = bytes;
    void* params[] = {&pointer, &n};
    mqx::device::KernelLaunch launch;
    launch.function = fill;
    launch.params = params;
    if (manager.launch(launch) != mqx::Status::Success || manager.synchronizeAll() != mqx::Status::Success) return 4;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  // Until the test terminates it: the eviction server answers meanwhile.
  sigset_t terminate;
  sigemptyset(&terminate);
  sigaddset(&terminate, SIGTERM);
  int received = 0;
  sigwait(&terminate, &received);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "two-regions") {
    std::fprintf(stderr, "usage: mqx_sim_device_client two-regions BYTES\n");
    return 2;
  }
  try {
    // SIGTERM blocked in every thread (the eviction server's too), taken by
    // sigwait.
    sigset_t terminate;
    sigemptyset(&terminate);
    sigaddset(&terminate, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &terminate, nullptr);
    const mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    mqx::embedded::SimDevice device(config, "sim_device_client");
    if (!device.onNode()) {
      std::fprintf(stderr, "sim_device_client: no daemon\n");
      return 3;
    }
    return twoRegions(device, std::strtoull(argv[2], nullptr, 10));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sim_device_client: %s\n", error.what());
    return 5;
  }
}
