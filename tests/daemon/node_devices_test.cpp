// The node's devices as mqxd lists them (docs/daemon.md, "Several GPUs"):
// which GPUs CUDA_VISIBLE_DEVICES shows, UUIDs as nvidia-smi -L prints them,
// each device's budget, and the admission wait explained per device.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

#include "ipc/node_snapshot.hpp"
#include "node_capacity.hpp"

namespace mqx::daemon {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

std::vector<DeviceMemory> fourGpus() {
  std::vector<DeviceMemory> gpus;
  for (int i = 0; i < 4; ++i)
    gpus.push_back({(80 + 10 * static_cast<std::uint64_t>(i)) * kGiB, 0, "injected",
                    "GPU-" + std::string(1, static_cast<char>('a' + i)) + "1234567-89ab-cdef-0123-456789abcdef"});
  return gpus;
}

std::vector<std::string> identities(const std::vector<DeviceMemory>& devices) {
  std::vector<std::string> result;
  for (const auto& device : devices)
    result.push_back(device.identity.substr(0, 5));
  return result;
}

TEST(NodeDevices, CudaVisibleDevicesPicksAndOrdersTheGpusAsCudaDoes) {
  const auto all = fourGpus();
  using Names = std::vector<std::string>;
  EXPECT_EQ(identities(visibleDevices(all, nullptr)), (Names{"GPU-a", "GPU-b", "GPU-c", "GPU-d"})) << "unset: all";
  EXPECT_EQ(identities(visibleDevices(all, "")), Names{}) << "empty: none";
  EXPECT_EQ(identities(visibleDevices(all, "2,0")), (Names{"GPU-c", "GPU-a"}));
  EXPECT_EQ(identities(visibleDevices(all, "GPU-d1234567-89ab-cdef-0123-456789abcdef,1")), (Names{"GPU-d", "GPU-b"}));
  EXPECT_EQ(identities(visibleDevices(all, "GPU-b12")), (Names{"GPU-b"})) << "a unique prefix";
  EXPECT_EQ(identities(visibleDevices(all, "GPU-")), Names{}) << "an ambiguous prefix names none";
  EXPECT_EQ(identities(visibleDevices(all, "1,7,2")), (Names{"GPU-b"})) << "the list ends at an invalid entry";
  EXPECT_EQ(identities(visibleDevices(all, "3,3,0")), (Names{"GPU-d", "GPU-a"})) << "an entry twice counts once";
  EXPECT_EQ(identities(visibleDevices(all, " 1 , 2")), (Names{"GPU-b", "GPU-c"}));
}

TEST(NodeDevices, CudaUuidBytesAreFormattedAsNvidiaSmiPrintsThem) {
  const unsigned char bytes[16] = {0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81,
                                   0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8, 0x09};
  EXPECT_EQ(formatGpuUuid(bytes), "GPU-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809");
}

TEST(NodeDevices, EveryGpuIsADeviceWithItsOwnBudget) {
  Config config;
  const auto gpus = fourGpus();
  auto devices = nodeDevices(config, [&] { return gpus; });
  ASSERT_EQ(devices.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(devices[i].identity, gpus[i].identity);
    EXPECT_EQ(devices[i].capacity, gpus[i].totalBytes - deviceReserveBytes(gpus[i].totalBytes)) << i;
  }
  // A budget set applies to each device.
  config.daemonCapacity = 6 * kGiB;
  devices = nodeDevices(config, [&] { return gpus; });
  ASSERT_EQ(devices.size(), 4u);
  for (const auto& device : devices)
    EXPECT_EQ(device.capacity, 6 * kGiB) << device.origin;
  config.daemonCapacity = 0;
  config.deviceMemoryLimit = 5 * kGiB;
  EXPECT_EQ(nodeDevices(config, [&] { return gpus; })[3].capacity, 5 * kGiB);
  // More GPUs than the segment lists: the first kMaxDevices.
  std::vector<DeviceMemory> many(ipc::kMaxDevices + 3, gpus[0]);
  EXPECT_EQ(nodeDevices(config, [&] { return many; }).size(), ipc::kMaxDevices);
}

TEST(NodeDevices, SimDevicesAreSimNEachOfSimCapacity) {
  Config config;
  config.backend = BackendKind::Sim;
  config.simDevices = 3;
  config.simCapacity = 48 * kMiB;
  int probed = 0;
  const auto devices = nodeDevices(config, [&] {
    ++probed;
    return fourGpus();
  });
  EXPECT_EQ(probed, 0);
  ASSERT_EQ(devices.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(devices[i].identity, "sim-" + std::to_string(i));
    EXPECT_EQ(devices[i].capacity, 48 * kMiB);
  }
  config.backend = BackendKind::Auto; // no GPU: the simulated devices
  config.daemonCapacity = 8 * kMiB;
  const auto fallback = nodeDevices(config, [] { return std::vector<DeviceMemory>{}; });
  ASSERT_EQ(fallback.size(), 3u);
  EXPECT_EQ(fallback[2].capacity, 8 * kMiB);
}

// A snapshot of a node of two 32 MiB devices: `holder` runs with 24 MiB on
// sim-0 and one query waits, placed nowhere yet or asking for a device.
ipc::NodeSnapshot twoDevices(std::uint32_t waitingFor) {
  ipc::NodeSnapshot node;
  node.devices = {{0, "sim-0", 32 * kMiB}, {1, "sim-1", 32 * kMiB}};
  node.capacity = 64 * kMiB;
  ipc::ClientSnapshot holder;
  holder.slot = 0;
  holder.state = ipc::ClientState::Running;
  holder.pid = 999999999; // no such process: not stopped
  holder.name = "holder";
  holder.arrival = 1;
  holder.weightedDemand = holder.peakDemand = 24 * kMiB;
  holder.device = 0;
  holder.deviceIdentity = "sim-0";
  ipc::ClientSnapshot waiting;
  waiting.slot = 1;
  waiting.state = ipc::ClientState::Waiting;
  waiting.pid = 999999998;
  waiting.name = "waiting";
  waiting.arrival = 2;
  waiting.weightedDemand = waiting.peakDemand = 16 * kMiB;
  waiting.device = waitingFor;
  waiting.deviceIdentity = waitingFor == ipc::kAnyDevice ? "" : "sim-" + std::to_string(waitingFor);
  node.clients = {holder, waiting};
  return node;
}

// Under adaptive, a query that declares nothing is not said to "need 0 and
// fit": mqxd counts it as its whole device until one of its name is measured.
TEST(NodeDevices, TheAdmissionWaitOfAnUndeclaredQuerySaysHowMqxdCountsIt) {
  auto node = twoDevices(0);
  node.clients[1].weightedDemand = node.clients[1].peakDemand = 0;
  const std::string adaptive = ipc::describeAdmissionWait(node, 1, AdmissionKind::Adaptive, 2);
  EXPECT_NE(adaptive.find("it declares no demand, and mqxd counts it as its whole device"), std::string::npos)
      << adaptive;
  EXPECT_EQ(adaptive.find("(it fits)"), std::string::npos) << adaptive;
  node.clients[0].weightedDemand = node.clients[0].peakDemand = 0; // the holder declares nothing either
  const std::string holder = ipc::describeAdmissionWait(node, 1, AdmissionKind::Adaptive, 2);
  EXPECT_NE(holder.find("'holder' (pid 999999999) on sim-0 declares no demand, holds"), std::string::npos) << holder;
  const std::string weight = ipc::describeAdmissionWait(node, 1, AdmissionKind::Weight, 2);
  EXPECT_NE(weight.find("it needs 0.0 MiB (weighted demand)"), std::string::npos) << weight;
}

TEST(NodeDevices, TheAdmissionWaitNamesEachDeviceTheQueryMayRunOn) {
  const std::string anywhere = ipc::describeAdmissionWait(twoDevices(ipc::kAnyDevice), 1, AdmissionKind::Weight, 2);
  EXPECT_NE(anywhere.find("it needs 16.0 MiB (weighted demand); on the node's devices: sim-0 8.0 MiB of 32.0 MiB "
                          "free, sim-1 32.0 MiB of 32.0 MiB free (it fits)"),
            std::string::npos)
      << anywhere;
  EXPECT_NE(anywhere.find("'holder' (pid 999999999) on sim-0 demand 24.0 MiB"), std::string::npos) << anywhere;
  const std::string pinned = ipc::describeAdmissionWait(twoDevices(0), 1, AdmissionKind::Weight, 2);
  EXPECT_NE(pinned.find("on the device it asked for: sim-0 8.0 MiB of 32.0 MiB free;"), std::string::npos) << pinned;
  EXPECT_EQ(pinned.find("sim-1"), std::string::npos) << pinned;
  const std::string other = ipc::describeAdmissionWait(twoDevices(1), 1, AdmissionKind::Weight, 2);
  EXPECT_NE(other.find("nothing runs"), std::string::npos) << "sim-0's holder is not in its way: " << other;
  const std::string fix = ipc::describeAdmissionWait(twoDevices(ipc::kAnyDevice), 1, AdmissionKind::Fix, 1);
  EXPECT_NE(fix.find("at most 1 queries run on a device (admission fix); on the node's devices: sim-0 1 running, "
                     "sim-1 0 running"),
            std::string::npos)
      << fix;
}

} // namespace
} // namespace mqx::daemon
