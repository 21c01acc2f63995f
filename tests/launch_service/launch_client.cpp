// mqx_launch_client: a query process on the simulated device for the launch
// service tests. It joins mqxd's node (MQX_DAEMON_INSTANCE), launches one
// kernel through the same path as libmqx.so's launch hook
// (ResizableLaunches in front of MemoryManager::launch, a LaunchTuner to
// mqxd), checks the result and reports the launch it made.
//
//   mqx_launch_client NAME MODE GRID BLOCK ELEMENTS REGISTERS SHARED REPORT [HOLD]
//     NAME       the kernel's name (as cuFuncGetName would report it)
//     MODE       "plain" (resizable only if NAME is in kernelopt.resizable_kernels)
//                or "declare" (declared through the advice API's path)
//     GRID BLOCK the application's own launch
//     ELEMENTS   bytes the grid-stride kernel transforms (data[i] = 3 data[i] + 1)
//     REGISTERS SHARED  the kernel's registers per thread and static shared bytes
//     REPORT     file that receives "GRID BLOCK ASKED SOLVED" of the launch
//                made (ASKED: 1 when the launch service was asked; SOLVED:
//                the kernels it placed together, 0 when it kept its own)
//     HOLD       the kernel runs until this file exists (at most 20 s)
// Prints "launched" once the kernel is enqueued. Exit 0: the result is
// right; 1: wrong result; 4: a call failed.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "core/memory_manager.hpp"
#include "device/resizable_launches.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "ipc/manager_on_node.hpp"
#include "ipc/node_membership.hpp"

namespace {

using mqx::Status;

bool fileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// One simulated kernel: every (block, thread) of the grid runs a grid-stride
// loop, so any grid and block size computes the same result.
mqx::device::SimKernel gridStrideKernel(std::string hold) {
  return [hold](const mqx::device::SimKernelContext& context, void** params) {
    auto* data = *static_cast<std::uint8_t**>(params[0]);
    const auto n = *static_cast<std::uint64_t*>(params[1]);
    const std::uint64_t stride = std::uint64_t{context.grid[0]} * context.block[0];
    for (std::uint64_t thread = 0; thread < stride; ++thread)
      for (std::uint64_t i = thread; i < n; i += stride)
        data[i] = static_cast<std::uint8_t>(data[i] * 3 + 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!hold.empty() && !fileExists(hold) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
}

int run(int argc, char** argv) {
  const std::string name = argv[1];
  const std::string mode = argv[2];
  const unsigned grid = static_cast<unsigned>(std::stoul(argv[3]));
  const unsigned block = static_cast<unsigned>(std::stoul(argv[4]));
  const std::uint64_t elements = std::stoull(argv[5]);
  const int registers = std::stoi(argv[6]);
  const int shared = std::stoi(argv[7]);
  const std::string report = argv[8];
  const std::string hold = argc > 9 ? argv[9] : "";

  const mqx::Config config = mqx::loadConfig();
  mqx::setLogLevel(config.logLevel);
  auto node = mqx::ipc::NodeMembership::connect(mqx::embedded::nodeOptions(config),
                                                mqx::ipc::NodeMembership::Role::Memory, "launch-client");
  mqx::device::SimBackend backend(mqx::embedded::simBackendOptions(config));
  mqx::ipc::ManagerOnNode onNode(
      mqx::embedded::managerOptions(config), backend, node,
      node ? std::make_shared<mqx::ipc::AdmissionClient>(node, mqx::embedded::admissionOptions(config)) : nullptr);
  mqx::MemoryManager* manager = &onNode.manager();
  const mqx::FunctionHandle kernel =
      backend.registerKernel(gridStrideKernel(hold), {{0, 8}, {8, 8}}, {name, registers, shared, 1024});
  // As the hook does: launch tuning only with a tuner (mqxd) to ask.
  std::unique_ptr<mqx::device::ResizableLaunches> resizable;
  if (auto tuner = mqx::ipc::LaunchTuningClient::connect(
          config.daemonInstance, std::chrono::milliseconds(config.launchReplyTimeoutMilliseconds)))
    resizable = std::make_unique<mqx::device::ResizableLaunches>(config.resizableKernels, tuner);
  if (resizable && mode == "declare") resizable->declare(kernel);

  std::vector<std::uint8_t> host(elements), expected(elements);
  for (std::uint64_t i = 0; i < elements; ++i) {
    host[i] = static_cast<std::uint8_t>(i * 7 + 3);
    expected[i] = static_cast<std::uint8_t>(host[i] * 3 + 1);
  }
  mqx::DevicePtr data = 0;
  const mqx::StreamHandle stream = backend.createStream();
  if (manager->allocate(elements, &data) != Status::Success ||
      manager->copyHostToDevice(data, host.data(), elements, stream, true) != Status::Success)
    return 4;

  mqx::device::KernelLaunch launch;
  launch.function = kernel;
  launch.grid[0] = grid;
  launch.block[0] = block;
  launch.stream = stream;
  std::uint64_t count = elements;
  void* params[] = {&data, &count};
  launch.params = params;
  std::uint64_t ticket = 0;
  unsigned solved = 0;
  mqx::device::KernelProperties properties;
  if (resizable && backend.kernelProperties(kernel, &properties) == Status::Success &&
      resizable->isResizable(kernel, properties.name))
    ticket = resizable->tune(launch, properties, mqx::device::SimBackend::deviceAttributes(), &solved);
  const Status launched = manager->launch(launch);
  if (resizable) {
    mqx::device::Fence fence;
    const bool fenced = launched == Status::Success && backend.enqueueFence(stream, &fence) == Status::Success;
    resizable->launched(ticket, fenced ? mqx::device::ResizableLaunches::CompletionProbe(
                                             [&backend, fence] { return backend.fenceReached(fence); })
                                       : nullptr);
  }
  if (launched != Status::Success) return 4;
  std::ofstream(report) << launch.grid[0] << ' ' << launch.block[0] << ' ' << (ticket != 0) << ' ' << solved << '\n';
  std::printf("launched\n");
  std::fflush(stdout);

  std::vector<std::uint8_t> result(elements);
  if (manager->copyDeviceToHost(result.data(), data, elements, stream, true) != Status::Success) return 4;
  if (resizable) resizable->poll();
  if (result != expected) {
    std::fprintf(stderr, "launch_client %d: wrong result\n", getpid());
    return 1;
  }
  if (manager->free(data) != Status::Success || backend.destroyStream(stream) != Status::Success) {
    std::fprintf(stderr, "launch_client %d: free or stream destruction failed\n", getpid());
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr, "usage: mqx_launch_client NAME MODE GRID BLOCK ELEMENTS REGISTERS SHARED REPORT [HOLD]\n");
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "launch_client: %s\n", error.what());
    return 4;
  }
}
