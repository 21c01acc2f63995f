// The launch service (docs/kernelopt.md, "Launch service"): LaunchService
// against kernelopt called directly on the same set of kernels, and the
// whole path with a real mqxd and real client processes on the simulated
// device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "daemon/launch_service.hpp"
#include "device/sim/sim_backend.hpp"
#include "ipc/launch_tuning_client.hpp"
#include "kernelopt/batch_optimizer.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"
#include "node_fixture.hpp"

namespace mqx::test {
namespace {

using daemon::LaunchService;
using kernelopt::KernelDemand;
using Clock = std::chrono::steady_clock;

ipc::LaunchTuningFields kernelOf(std::uint64_t threads, int registers, int shared, int ownBlock = 256) {
  ipc::LaunchTuningFields fields;
  fields.threads = threads;
  fields.registersPerThread = static_cast<std::uint32_t>(registers);
  fields.sharedMemoryPerBlock = static_cast<std::uint32_t>(shared);
  fields.maxThreadsPerBlock = 1024;
  fields.ownThreadsPerBlock = static_cast<std::uint32_t>(ownBlock);
  fields.device = device::SimBackend::deviceAttributes();
  return fields;
}

// The reference: kernelopt on the set, the last kernel's launch.
LaunchService::Answer reference(const std::vector<ipc::LaunchTuningFields>& set) {
  const auto limits = kernelopt::DeviceLimits::fromAttributes(set.back().device);
  std::vector<KernelDemand> demands;
  for (const auto& kernel : set)
    demands.push_back(LaunchService::demandOf(kernel));
  kernelopt::KernelLevelOptimizer optimizer(limits);
  auto together = optimizer.solve(demands);
  if (together.feasible)
    return {static_cast<unsigned>(together.launches.back().threadsPerBlock),
            static_cast<unsigned>(together.launches.back().gridBlocks), static_cast<unsigned>(set.size())};
  kernelopt::BatchOptimizer batches(limits);
  for (const auto& batch : batches.planExact(demands).batches)
    for (std::size_t i = 0; i < batch.kernels.size(); ++i)
      if (batch.kernels[i] == set.size() - 1)
        return {static_cast<unsigned>(batch.solution.launches[i].threadsPerBlock),
                static_cast<unsigned>(batch.solution.launches[i].gridBlocks),
                static_cast<unsigned>(batch.kernels.size())};
  return {};
}

void expectEqual(const LaunchService::Answer& actual, const LaunchService::Answer& expected, const std::string& why) {
  EXPECT_EQ(actual.threadsPerBlock, expected.threadsPerBlock) << why;
  EXPECT_EQ(actual.gridBlocks, expected.gridBlocks) << why;
  EXPECT_EQ(actual.kernelsSolved, expected.kernelsSolved) << why;
}

TEST(LaunchService, AloneTheKernelGetsItsSingleKernelOptimum) {
  LaunchService service(std::chrono::milliseconds(1000), 1);
  const auto kernel = kernelOf(132 * 1536, 32, 0);
  const auto answer = service.request(100, 1, kernel, Clock::now());
  // 1536 threads per SM in one block is beyond 1024: 2 blocks of 768.
  EXPECT_EQ(answer.threadsPerBlock, 768u);
  EXPECT_EQ(answer.gridBlocks, 264u);
  EXPECT_EQ(answer.kernelsSolved, 1u);
  expectEqual(answer, reference({kernel}), "alone");
}

TEST(LaunchService, DemandIsCappedAtWhatTheKernelKeepsResidentAlone) {
  // A grid of 10 million threads of a 64-register kernel at 256 threads per
  // block keeps 4 blocks (1024 threads) per SM resident.
  const auto demand = LaunchService::demandOf(kernelOf(10'000'000, 64, 0, 256));
  EXPECT_EQ(demand.threads, 132 * 1024);
  EXPECT_EQ(LaunchService::demandOf(kernelOf(5000, 64, 0, 256)).threads, 5000);
}

TEST(LaunchService, SecondKernelIsSolvedWithTheFirstAndFinishedOnesStopCounting) {
  LaunchService service(std::chrono::milliseconds(1000), 1);
  const auto first = kernelOf(132 * 1024, 32, 8192);
  const auto second = kernelOf(132 * 800, 40, 4096);
  service.request(100, 1, first, Clock::now());
  const auto together = service.request(200, 1, second, Clock::now());
  expectEqual(together, reference({first, second}), "together");
  EXPECT_EQ(together.kernelsSolved, 2u);
  service.finished(100, 1);
  EXPECT_EQ(service.pendingKernels(), 1u);
  const auto third = service.request(300, 7, first, Clock::now());
  expectEqual(third, reference({second, first}), "after the first finished");
}

TEST(LaunchService, KernelsThatDoNotFitTogetherGetTheirBatchsParameters) {
  LaunchService service(std::chrono::milliseconds(1000), 1);
  // Each wants a whole SM's threads: no two fit together.
  const auto big = kernelOf(132 * 2048, 32, 0, 1024);
  service.request(1, 1, big, Clock::now());
  const auto second = service.request(2, 1, big, Clock::now());
  expectEqual(second, reference({big, big}), "batched");
  EXPECT_EQ(second.kernelsSolved, 1u);
  EXPECT_GT(second.threadsPerBlock, 0u);
}

TEST(LaunchService, UnsupportedDeviceKeepsTheLaunchsOwnParameters) {
  LaunchService service(std::chrono::milliseconds(1000), 1);
  auto kernel = kernelOf(132 * 256, 32, 0);
  kernel.device.computeCapabilityMajor = 6; // before sm_70: refused
  const auto answer = service.request(1, 1, kernel, Clock::now());
  EXPECT_EQ(answer.threadsPerBlock, 0u);
  EXPECT_EQ(service.pendingKernels(), 0u);
}

TEST(LaunchService, LeaseAndDeadProcessesExpire) {
  LaunchService service(std::chrono::milliseconds(50), 1);
  const auto now = Clock::now();
  service.request(111, 1, kernelOf(1000, 32, 0), now);
  service.request(222, 1, kernelOf(1000, 32, 0), now + std::chrono::milliseconds(40));
  auto dead = service.expire(now + std::chrono::milliseconds(60), [](pid_t pid) { return pid != 222; });
  EXPECT_EQ(dead, std::vector<pid_t>{222});
  EXPECT_EQ(service.pendingKernels(), 0u); // 111 passed its lease, 222 is dead
}

TEST(LaunchService, KernelsOfAnotherDeviceDoNotCompete) {
  LaunchService service(std::chrono::milliseconds(1000), 1);
  auto other = kernelOf(132 * 1024, 32, 0);
  other.device.multiprocessorCount = 108;
  service.request(1, 1, other, Clock::now());
  const auto mine = kernelOf(132 * 1024, 32, 0);
  expectEqual(service.request(2, 1, mine, Clock::now()), reference({mine}), "other device ignored");
}

// A node of several devices (docs/daemon.md, "Several GPUs"): each device's
// kernels are solved apart, even on identical GPUs; a device the node lacks
// is refused.
TEST(LaunchService, EachNodeDeviceIsSolvedApart) {
  LaunchService service(std::chrono::milliseconds(1000), 2);
  auto onFirst = kernelOf(132 * 1024, 32, 8192);
  auto onSecond = kernelOf(132 * 800, 40, 4096);
  onSecond.nodeDevice = 1;
  service.request(1, 1, onSecond, Clock::now());
  expectEqual(service.request(2, 1, onFirst, Clock::now()), reference({onFirst}), "device 1's kernel ignored");
  auto alsoSecond = onFirst;
  alsoSecond.nodeDevice = 1;
  const auto together = service.request(3, 1, alsoSecond, Clock::now());
  expectEqual(together, reference({onSecond, alsoSecond}), "device 1's kernels together");
  EXPECT_EQ(together.kernelsSolved, 2u);
  EXPECT_EQ(service.pendingKernels(0), 1u);
  EXPECT_EQ(service.pendingKernels(1), 2u);
  auto nowhere = onFirst;
  nowhere.nodeDevice = 2;
  EXPECT_EQ(service.request(4, 1, nowhere, Clock::now()).threadsPerBlock, 0u) << "the node has two devices";
  EXPECT_EQ(service.pendingKernels(), 3u);
  // A process's tuner for one device names it in every request.
  struct Recorder final : device::LaunchTuner {
    std::uint32_t named = 99;
    std::optional<device::TunedLaunch> tune(const device::TuningRequest& request, std::uint64_t*) override {
      named = request.nodeDevice;
      return std::nullopt;
    }
    void finished(std::uint64_t) override {}
  };
  auto recorder = std::make_shared<Recorder>();
  ipc::NodeDeviceLaunchTuner tuner(recorder, 1);
  std::uint64_t ticket = 0;
  tuner.tune(device::TuningRequest{}, &ticket);
  EXPECT_EQ(recorder->named, 1u);
}

// Seeded random sequences of requests and completions against a reference
// that keeps the set itself and calls kernelopt directly.
TEST(LaunchService, RandomSequencesEqualKernelopt) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  LaunchService service(std::chrono::hours(1), 1);
  std::vector<std::pair<std::uint64_t, ipc::LaunchTuningFields>> active;
  std::uint64_t ticket = 0;
  for (int step = 0; step < 300; ++step) {
    if (!active.empty() && random() % 3 == 0) {
      const std::size_t victim = random() % active.size();
      service.finished(42, active[victim].first);
      active.erase(active.begin() + static_cast<long>(victim));
      continue;
    }
    const int block = 32 << (random() % 6);
    auto kernel = kernelOf(1 + random() % (132 * 1500), 16 + static_cast<int>(random() % 48),
                           static_cast<int>(random() % 4) * 12288, block);
    std::vector<ipc::LaunchTuningFields> set;
    for (const auto& [t, k] : active)
      set.push_back(k);
    set.push_back(kernel);
    if (set.size() > 10) { // keep the reference's exact batch plan small
      service.finished(42, active.front().first);
      active.erase(active.begin());
      set.erase(set.begin());
    }
    const auto answer = service.request(42, ++ticket, kernel, Clock::now());
    expectEqual(answer, reference(set), "step " + std::to_string(step));
    if (HasFailure()) return;
    active.emplace_back(ticket, kernel);
  }
}

// The whole path: mqxd and client processes on the simulated device.
class LaunchServiceNode : public NodeFixture {
protected:
  void SetUp() override {
    NodeFixture::SetUp();
    environment_["MQX_KERNELOPT_RESIZABLE_KERNELS"] = "scale_grid_stride,other_resizable";
    environment_["MQX_KERNELOPT_REPLY_TIMEOUT_MS"] = "2000"; // a loaded CI machine
    directory_ = "/tmp/mqx-launch-" + instance_;
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override {
    NodeFixture::TearDown();
    std::filesystem::remove_all(directory_);
  }

  struct Report {
    unsigned grid = 0;
    unsigned block = 0;
    int asked = -1;
    unsigned solved = 0;
  };
  Report readReport(const std::string& path) {
    Report report;
    std::ifstream(path) >> report.grid >> report.block >> report.asked >> report.solved;
    return report;
  }
  // A client launching NAME with its own GRID x BLOCK over ELEMENTS bytes.
  std::unique_ptr<ChildProcess> launch(const std::string& tag, const std::string& name, const std::string& mode,
                                       unsigned grid, unsigned block, int registers, int shared,
                                       const std::string& hold = "") {
    std::vector<std::string> args{name,
                                  mode,
                                  std::to_string(grid),
                                  std::to_string(block),
                                  "300000",
                                  std::to_string(registers),
                                  std::to_string(shared),
                                  directory_ + "/" + tag};
    if (!hold.empty()) args.push_back(hold);
    return client(args);
  }
  std::string directory_;
};

ipc::LaunchTuningFields simKernel(unsigned grid, unsigned block, int registers, int shared) {
  auto kernel = kernelOf(std::uint64_t{grid} * block, registers, shared, static_cast<int>(block));
  return kernel;
}

TEST_F(LaunchServiceNode, TwoProcessesReceiveTheOptimizersParametersForTheirSet) {
  startDaemon();
  const std::string hold = directory_ + "/release";
  // The first kernel stays running until released, so the second is solved
  // together with it.
  auto first = launch("a", "scale_grid_stride", "plain", 264, 128, 32, 6144, hold);
  ASSERT_TRUE(first->waitForLine("launched", 10s));
  auto second = launch("b", "other_resizable", "plain", 300, 256, 48, 0);
  ASSERT_TRUE(second->waitForLine("launched", 10s));
  std::ofstream(hold) << "go\n";
  EXPECT_EQ(first->wait(20s), 0);
  EXPECT_EQ(second->wait(20s), 0);

  const auto a = simKernel(264, 128, 32, 6144);
  const auto b = simKernel(300, 256, 48, 0);
  const auto expectedA = reference({a});
  const auto expectedB = reference({a, b});
  const Report reportA = readReport(directory_ + "/a");
  const Report reportB = readReport(directory_ + "/b");
  EXPECT_EQ(reportA.asked, 1);
  EXPECT_EQ(reportA.grid, expectedA.gridBlocks);
  EXPECT_EQ(reportA.block, expectedA.threadsPerBlock);
  EXPECT_EQ(reportB.asked, 1);
  EXPECT_EQ(reportB.grid, expectedB.gridBlocks);
  EXPECT_EQ(reportB.block, expectedB.threadsPerBlock);
  EXPECT_EQ(reportA.solved, 1u);
  EXPECT_EQ(reportB.solved, 2u); // the first was counted as running
  EXPECT_EQ(expectedB.kernelsSolved, 2u);
  // The optimizer really changed the launches: otherwise the test proves little.
  EXPECT_NE(reportA.grid * 10000 + reportA.block, 264u * 10000 + 128u);
  EXPECT_NE(reportB.grid * 10000 + reportB.block, 300u * 10000 + 256u);
}

TEST_F(LaunchServiceNode, CompletedKernelsStopCounting) {
  startDaemon();
  auto first = launch("a", "scale_grid_stride", "plain", 264, 128, 32, 6144);
  EXPECT_EQ(first->wait(20s), 0);
  // The first reported its completion: the second is solved alone.
  auto second = launch("b", "other_resizable", "plain", 300, 256, 48, 0);
  EXPECT_EQ(second->wait(20s), 0);
  const auto expected = reference({simKernel(300, 256, 48, 0)});
  const Report report = readReport(directory_ + "/b");
  EXPECT_EQ(report.solved, 1u);
  EXPECT_EQ(report.grid, expected.gridBlocks);
  EXPECT_EQ(report.block, expected.threadsPerBlock);
}

TEST_F(LaunchServiceNode, NonResizableKernelKeepsItsParameters) {
  startDaemon();
  auto process = launch("a", "ordinary_kernel", "plain", 300, 96, 32, 0);
  EXPECT_EQ(process->wait(20s), 0);
  const Report report = readReport(directory_ + "/a");
  EXPECT_EQ(report.asked, 0);
  EXPECT_EQ(report.grid, 300u);
  EXPECT_EQ(report.block, 96u);
}

TEST_F(LaunchServiceNode, KernelDeclaredThroughTheAdviceApiIsTuned) {
  startDaemon();
  auto process = launch("a", "ordinary_kernel", "declare", 300, 96, 32, 0);
  EXPECT_EQ(process->wait(20s), 0);
  const auto expected = reference({simKernel(300, 96, 32, 0)});
  const Report report = readReport(directory_ + "/a");
  EXPECT_EQ(report.asked, 1);
  EXPECT_EQ(report.grid, expected.gridBlocks);
  EXPECT_EQ(report.block, expected.threadsPerBlock);
}

TEST_F(LaunchServiceNode, WithoutDaemonTheLaunchKeepsItsParameters) {
  auto process = launch("a", "scale_grid_stride", "plain", 300, 96, 32, 0);
  EXPECT_EQ(process->wait(20s), 0);
  const Report report = readReport(directory_ + "/a");
  EXPECT_EQ(report.asked, 0);
  EXPECT_EQ(report.grid, 300u);
  EXPECT_EQ(report.block, 96u);
}

} // namespace
} // namespace mqx::test
