// kernelopt_mix_bench: concurrent kernel mixes on the GPU (docs/kernelopt.md
// §10). Each mix is a set of independent hash-join phase kernels of the
// knapsack paper's queries Q1-Q5 (build, scan, probe; mix_kernels.cu),
// timed three ways: one after another with their default parameters (256
// threads per block, one thread per element), each on its own stream with
// the default parameters, and each on its own stream with the parameters of
// kernelopt (Algorithm 1, batch-level when they do not fit an SM together;
// demand as mqxd's launch service computes it). Every mode's results are
// checked against the sequential run.
//
//   kernelopt_mix_bench [--json PATH] [--commit SHA] [--repeats N]
// Exit 0; 1 when results differ; 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "kernelopt/batch_optimizer.hpp"
#include "kernelopt/cudart_device_attributes.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"
#include "kernelopt/occupancy.hpp"
#include "mix_bench_report.hpp"
#include "mix_kernels.hpp"

namespace {

using namespace mqx::kernelopt;

constexpr unsigned kDefaultBlock = 256;

struct Spec {
  Phase phase;
  const char* query;
  int elements;
};
struct Mix {
  std::string name;
  std::vector<Spec> kernels;
};

const char* phaseName(Phase phase) { return phase == Phase::Build ? "build" : phase == Phase::Scan ? "scan" : "probe"; }

// Sizes after the SSB scale-factor-1 tables the paper's queries join
// (dimension builds of 2.5K-200K rows, fact scans and probes of 0.5M-6M),
// scaled down so that the kernels are short and their concurrency matters.
std::vector<Mix> mixes() {
  return {
      {"Q1-Q5 build",
       {{Phase::Build, "Q1", 2556},
        {Phase::Build, "Q2", 20000},
        {Phase::Build, "Q3", 30000},
        {Phase::Build, "Q4", 100000},
        {Phase::Build, "Q5", 200000}}},
      {"Q1-Q5 scan",
       {{Phase::Scan, "Q1", 600000},
        {Phase::Scan, "Q2", 200000},
        {Phase::Scan, "Q3", 400000},
        {Phase::Scan, "Q4", 100000},
        {Phase::Scan, "Q5", 300000}}},
      {"Q1-Q5 probe",
       {{Phase::Probe, "Q1", 300000},
        {Phase::Probe, "Q2", 150000},
        {Phase::Probe, "Q3", 250000},
        {Phase::Probe, "Q4", 100000},
        {Phase::Probe, "Q5", 200000}}},
      {"Q1-Q5 mixed phases",
       {{Phase::Build, "Q1", 50000},
        {Phase::Scan, "Q2", 400000},
        {Phase::Probe, "Q3", 200000},
        {Phase::Scan, "Q4", 150000},
        {Phase::Probe, "Q5", 100000}}},
      {"Q1-Q5 small kernels",
       {{Phase::Scan, "Q1", 20000},
        {Phase::Probe, "Q2", 30000},
        {Phase::Scan, "Q3", 25000},
        {Phase::Build, "Q4", 8000},
        {Phase::Probe, "Q5", 15000},
        {Phase::Scan, "Q1", 40000},
        {Phase::Probe, "Q3", 20000},
        {Phase::Scan, "Q5", 30000}}},
  };
}

using Launch = mqx::bench::MixLaunch;

struct Prepared {
  std::vector<PhaseKernel> kernels;
  std::vector<std::uint32_t*> buffers;
  std::vector<std::vector<std::uint32_t>> builtTables; // the tables probes use, to restore
};

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
    std::exit(2);
  }
}

int capacityFor(int elements) { return 2 * elements + 1; }

Prepared prepare(const Mix& mix) {
  Prepared prepared;
  std::uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (const Spec& spec : mix.kernels) {
    PhaseKernel kernel;
    kernel.phase = spec.phase;
    kernel.elements = spec.elements;
    std::vector<std::uint32_t> input(spec.elements);
    for (auto& value : input)
      value = next() % 1000000;
    check(cudaMalloc(&kernel.input, input.size() * 4), "cudaMalloc");
    check(cudaMemcpy(kernel.input, input.data(), input.size() * 4, cudaMemcpyHostToDevice), "copy");
    if (spec.phase != Phase::Scan) {
      kernel.capacity = capacityFor(spec.elements);
      check(cudaMalloc(&kernel.table, std::size_t(kernel.capacity) * 4), "cudaMalloc");
    }
    check(cudaMalloc(&kernel.counter, 8), "cudaMalloc");
    prepared.kernels.push_back(kernel);
  }
  return prepared;
}

// Before each run: empty build tables, probe tables built from the probe's
// own keys' first half (so about half the probes match), zero counters.
void reset(Prepared& prepared) {
  for (PhaseKernel& kernel : prepared.kernels) {
    check(cudaMemset(kernel.counter, 0, 8), "memset");
    if (kernel.table == nullptr) continue;
    check(cudaMemset(kernel.table, 0xff, std::size_t(kernel.capacity) * 4), "memset");
    if (kernel.phase == Phase::Probe) {
      PhaseKernel build = kernel;
      build.phase = Phase::Build;
      build.elements = kernel.elements / 2;
      launchPhase(build, (build.elements + 255) / 256, 256, nullptr);
    }
  }
  check(cudaDeviceSynchronize(), "reset");
}

// What each kernel left: its counter, or the filled slots of its table.
std::vector<unsigned long long> results(const Prepared& prepared) {
  std::vector<unsigned long long> out;
  for (const PhaseKernel& kernel : prepared.kernels) {
    if (kernel.phase == Phase::Build) {
      std::vector<std::uint32_t> table(kernel.capacity);
      check(cudaMemcpy(table.data(), kernel.table, table.size() * 4, cudaMemcpyDeviceToHost), "copy");
      out.push_back(std::count_if(table.begin(), table.end(), [](std::uint32_t v) { return v != 0xffffffffu; }));
    } else {
      unsigned long long value = 0;
      check(cudaMemcpy(&value, kernel.counter, 8, cudaMemcpyDeviceToHost), "copy");
      out.push_back(value);
    }
  }
  return out;
}

double runOnce(Prepared& prepared, const std::vector<Launch>& launches, const std::vector<cudaStream_t>& streams,
               bool concurrent) {
  reset(prepared);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, streams[0]);
  // Every stream starts after `start` and `stop` waits for all of them.
  std::vector<cudaEvent_t> done(prepared.kernels.size());
  for (std::size_t i = 0; i < prepared.kernels.size(); ++i) {
    cudaStream_t stream = concurrent ? streams[i + 1] : streams[0];
    if (concurrent) cudaStreamWaitEvent(stream, start, 0);
    launchPhase(prepared.kernels[i], launches[i].grid, launches[i].block, stream);
    cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming);
    cudaEventRecord(done[i], stream);
    cudaStreamWaitEvent(streams[0], done[i], 0);
  }
  cudaEventRecord(stop, streams[0]);
  check(cudaEventSynchronize(stop), "run");
  float milliseconds = 0;
  cudaEventElapsedTime(&milliseconds, start, stop);
  for (cudaEvent_t event : done)
    cudaEventDestroy(event);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return milliseconds;
}

// The optimizer's launches, with the demand mqxd's launch service gives a
// kernel: its threads, at most what it keeps resident alone at the default
// block size. Kernels in no batch keep the default.
std::vector<Launch> optimised(const DeviceLimits& limits, const Mix& mix, std::string* method) {
  std::vector<KernelDemand> demands;
  for (const Spec& spec : mix.kernels) {
    cudaFuncAttributes attributes{};
    cudaFuncGetAttributes(&attributes, phaseSymbol(spec.phase));
    KernelDemand demand;
    demand.registersPerThread = attributes.numRegs;
    demand.sharedMemoryPerBlock = static_cast<int>(attributes.sharedSizeBytes);
    demand.maxThreadsPerBlock = attributes.maxThreadsPerBlock;
    const auto alone = computeOccupancy(limits, {attributes.numRegs, demand.sharedMemoryPerBlock, int(kDefaultBlock)});
    const std::int64_t resident = std::int64_t(alone.activeBlocksPerSm) * kDefaultBlock * limits.smCount;
    demand.threads = std::max<std::int64_t>(1, std::min<std::int64_t>(spec.elements, resident));
    demands.push_back(demand);
  }
  std::vector<Launch> launches;
  for (const Spec& spec : mix.kernels)
    launches.push_back({unsigned((spec.elements + kDefaultBlock - 1) / kDefaultBlock), kDefaultBlock});
  KernelLevelOptimizer together(limits);
  const auto solution = together.solve(demands);
  if (solution.feasible) {
    *method = "kernel-level";
    for (std::size_t i = 0; i < demands.size(); ++i)
      launches[i] = {unsigned(solution.launches[i].gridBlocks), unsigned(solution.launches[i].threadsPerBlock)};
    return launches;
  }
  BatchOptimizer batches(limits);
  const auto plan = batches.plan(demands);
  *method = "batch-level (" + std::to_string(plan.batches.size()) + " batches)";
  for (const Batch& batch : plan.batches)
    for (std::size_t j = 0; j < batch.kernels.size(); ++j)
      launches[batch.kernels[j]] = {unsigned(batch.solution.launches[j].gridBlocks),
                                    unsigned(batch.solution.launches[j].threadsPerBlock)};
  return launches;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  std::string jsonPath, commit = "unknown";
  int repeats = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc)
      jsonPath = argv[++i];
    else if (arg == "--commit" && i + 1 < argc)
      commit = argv[++i];
    else if (arg == "--repeats" && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: kernelopt_mix_bench [--json PATH] [--commit SHA] [--repeats N]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  const DeviceLimits limits = DeviceLimits::fromAttributes(deviceAttributesOf(properties));
  std::printf("device: %s, %d repeats, median ms\n", properties.name, repeats);
  std::printf("%-22s %-28s %10s %10s %10s %8s %8s\n", "mix", "optimizer", "sequential", "streams", "optimised",
              "vs seq", "vs strm");
  mqx::bench::MixBenchRun run{properties.name, commit, repeats, {}, false};
  bool allSame = true;
  const auto all = mixes();
  for (std::size_t m = 0; m < all.size(); ++m) {
    const Mix& mix = all[m];
    Prepared prepared = prepare(mix);
    std::vector<cudaStream_t> streams(mix.kernels.size() + 1);
    for (auto& stream : streams)
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    std::vector<Launch> defaults;
    for (const Spec& spec : mix.kernels)
      defaults.push_back({unsigned((spec.elements + kDefaultBlock - 1) / kDefaultBlock), kDefaultBlock});
    std::string method;
    const std::vector<Launch> tuned = optimised(limits, mix, &method);
    // Warm-up and the reference results.
    runOnce(prepared, defaults, streams, false);
    const auto reference = results(prepared);
    std::vector<double> sequential, concurrent, optimisedTimes;
    for (int r = 0; r < repeats; ++r) {
      sequential.push_back(runOnce(prepared, defaults, streams, false));
      concurrent.push_back(runOnce(prepared, defaults, streams, true));
      allSame &= results(prepared) == reference;
      optimisedTimes.push_back(runOnce(prepared, tuned, streams, true));
      allSame &= results(prepared) == reference;
    }
    const double s = median(sequential), c = median(concurrent), o = median(optimisedTimes);
    std::printf("%-22s %-28s %10.4f %10.4f %10.4f %8.2f %8.2f\n", mix.name.c_str(), method.c_str(), s, c, o, s / o,
                c / o);
    mqx::bench::MixResult result{mix.name, method, {}, s, c, o};
    for (std::size_t i = 0; i < mix.kernels.size(); ++i)
      result.kernels.push_back(
          {mix.kernels[i].query, phaseName(mix.kernels[i].phase), mix.kernels[i].elements, defaults[i], tuned[i]});
    run.mixes.push_back(std::move(result));
    for (auto stream : streams)
      cudaStreamDestroy(stream);
    for (auto& kernel : prepared.kernels) {
      cudaFree(kernel.input);
      cudaFree(kernel.table);
      cudaFree(kernel.counter);
    }
  }
  run.resultsEqual = allSame;
  if (!jsonPath.empty() && !mqx::bench::writeJsonFile(jsonPath, mqx::bench::mixBenchJson(run))) return 1;
  if (!allSame) std::fprintf(stderr, "results differ between modes\n");
  return allSame ? 0 : 1;
}
