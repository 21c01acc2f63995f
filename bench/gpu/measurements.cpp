#include "measurements.hpp"

#include <dlfcn.h>
#include <initializer_list>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/memory_manager.hpp"
#include "device/cuda/cuda_backend.hpp"

namespace mqx::bench {
namespace {

#define BENCH_CU(call)                                                                                                 \
  do {                                                                                                                 \
    CUresult bench_result_ = (call);                                                                                   \
    if (bench_result_ != CUDA_SUCCESS) {                                                                               \
      const char* bench_name_ = "?";                                                                                   \
      cuGetErrorName(bench_result_, &bench_name_);                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, bench_name_);                                 \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

double seconds(const std::function<void()>& work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double fastest(int repetitions, const std::function<void()>& work) {
  double best = 1e300;
  for (int i = 0; i < repetitions; ++i)
    best = std::min(best, seconds(work));
  return best;
}

double gigabytesPerSecond(std::size_t bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

// The region whose launch forces an eviction: one page at any page size.
constexpr std::size_t kSmallBytes = 8 << 20;

// Pageable host memory, touched so that page faults are not measured.
struct Pageable {
  explicit Pageable(std::size_t bytes) : bytes(bytes), data(static_cast<char*>(std::aligned_alloc(4096, bytes))) {
    std::memset(data, 1, bytes);
  }
  ~Pageable() { std::free(data); }
  Pageable(const Pageable&) = delete;
  Pageable& operator=(const Pageable&) = delete;
  std::size_t bytes;
  char* data;
};

struct Pinned {
  explicit Pinned(std::size_t bytes) { BENCH_CU(cuMemHostAlloc(&data, bytes, 0)); }
  ~Pinned() { cuMemFreeHost(data); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  void* data = nullptr;
};

struct Device {
  explicit Device(std::size_t bytes) { BENCH_CU(cuMemAlloc(&pointer, bytes)); }
  ~Device() { cuMemFree(pointer); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  CUdeviceptr pointer = 0;
};

void launchTouch(const Setup& setup, CUdeviceptr data) {
  std::size_t words = setup.bytes / 4;
  void* params[] = {&data, &words, &data};
  BENCH_CU(cuLaunchKernel(setup.touch, 264, 1, 1, 256, 1, 1, 0, setup.stream, params, nullptr));
}

void launchFill(const Setup& setup, CUdeviceptr data, std::uint32_t value) {
  std::size_t words = setup.bytes / 4;
  void* params[] = {&data, &words, &value};
  BENCH_CU(cuLaunchKernel(setup.fill, 1056, 1, 1, 256, 1, 1, 0, setup.stream, params, nullptr));
}

void synchronize(const Setup& setup) { BENCH_CU(cuStreamSynchronize(setup.stream)); }

using Advise = int (*)(std::uint64_t, int);
void adviseOutput(CUdeviceptr pointer) {
  static auto advise = reinterpret_cast<Advise>(dlsym(RTLD_DEFAULT, "mqx_advise"));
  if (advise != nullptr && advise(pointer, 2) != 0) std::fprintf(stderr, "mqx_advise failed\n");
}

// One counter of libmqx's statistics; -1 when libmqx is absent, its answer is
// not JSON or the counter unknown.
long long mqxCounter(const char* name) {
  using StatisticsJson = std::size_t (*)(char*, std::size_t);
  static auto statisticsJson = reinterpret_cast<StatisticsJson>(dlsym(RTLD_DEFAULT, "mqx_statistics_json"));
  if (statisticsJson == nullptr) return -1;
  std::vector<char> text(statisticsJson(nullptr, 0) + 1); // the length, then the text
  statisticsJson(text.data(), text.size());
  const Json counters = Json::parse(text.data(), nullptr, /*allow_exceptions=*/false);
  const auto counter = counters.find(name);
  return counter != counters.end() && counter->is_number_integer() ? counter->get<long long>() : -1;
}

} // namespace

void measureLaunch(const Setup& setup, CUdeviceptr pointer, const std::string& prefix, Results& results) {
  constexpr int kLaunches = 20000;
  void* params[] = {&pointer};
  auto run = [&](int count) {
    for (int i = 0; i < count; ++i)
      BENCH_CU(cuLaunchKernel(setup.empty, 1, 1, 1, 32, 1, 1, 0, setup.stream, params, nullptr));
    synchronize(setup);
  };
  run(1000); // warm: module loading, first residency
  double best = fastest(setup.repetitions, [&] { run(kLaunches); });
  results.set(prefix + "launch_us", best / kLaunches * 1e6);
  // launch_us is a rate: 20000 launches fill the stream's queue, so it
  // mixes what the call costs on the host with what the GPU takes per
  // launch. The latency a program sees is the call itself: bursts short
  // enough never to block on a full queue, synchronized untimed between
  // bursts; the median burst is reported.
  constexpr int kBurst = 128;
  constexpr int kBursts = 400;
  std::vector<double> perLaunch;
  perLaunch.reserve(kBursts);
  for (int burst = 0; burst < kBursts; ++burst) {
    perLaunch.push_back(seconds([&] {
                          for (int i = 0; i < kBurst; ++i)
                            BENCH_CU(cuLaunchKernel(setup.empty, 1, 1, 1, 32, 1, 1, 0, setup.stream, params, nullptr));
                        }) /
                        kBurst);
    synchronize(setup);
  }
  std::nth_element(perLaunch.begin(), perLaunch.begin() + kBursts / 2, perLaunch.end());
  results.set(prefix + "launch_call_us", perLaunch[kBursts / 2] * 1e6);
}

void measureNativeTransfers(const Setup& setup, Results& results) {
  std::size_t bytes = setup.bytes;
  Device device(bytes);
  Pageable pageable(bytes);
  Pinned pinned(bytes);
  int reps = setup.repetitions;
  auto rate = [&](const char* name, const std::function<void()>& work) {
    results.set(name, gigabytesPerSecond(bytes, fastest(reps, work)));
  };
  rate("h2d_pageable_GBps", [&] { BENCH_CU(cuMemcpyHtoD(device.pointer, pageable.data, bytes)); });
  rate("h2d_pinned_GBps", [&] { BENCH_CU(cuMemcpyHtoD(device.pointer, pinned.data, bytes)); });
  rate("d2h_pageable_GBps", [&] { BENCH_CU(cuMemcpyDtoH(pageable.data, device.pointer, bytes)); });
  rate("d2h_pinned_GBps", [&] { BENCH_CU(cuMemcpyDtoH(pinned.data, device.pointer, bytes)); });
  // What a lazy load competes with: copy, then a kernel that needs the data.
  rate("load_pageable_then_kernel_GBps", [&] {
    BENCH_CU(cuMemcpyHtoD(device.pointer, pageable.data, bytes));
    launchTouch(setup, device.pointer);
    synchronize(setup);
  });
  rate("load_pinned_then_kernel_GBps", [&] {
    BENCH_CU(cuMemcpyHtoD(device.pointer, pinned.data, bytes));
    launchTouch(setup, device.pointer);
    synchronize(setup);
  });
  // The other way to make pageable data DMA-able: register it for the copy.
  rate("h2d_register_copy_unregister_GBps", [&] {
    BENCH_CU(cuMemHostRegister(pageable.data, bytes, CU_MEMHOSTREGISTER_READ_ONLY));
    BENCH_CU(cuMemcpyHtoDAsync(device.pointer, pageable.data, bytes, setup.stream));
    synchronize(setup);
    BENCH_CU(cuMemHostUnregister(pageable.data));
  });
  rate("register_unregister_GBps", [&] {
    BENCH_CU(cuMemHostRegister(pageable.data, bytes, CU_MEMHOSTREGISTER_READ_ONLY));
    BENCH_CU(cuMemHostUnregister(pageable.data));
  });
  // mqx's fence: one stream memory write per launch.
  void* word = nullptr;
  BENCH_CU(cuMemHostAlloc(&word, 64, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr deviceWord = 0;
  BENCH_CU(cuMemHostGetDevicePointer(&deviceWord, word, 0));
  constexpr int kWrites = 10000;
  double writes = fastest(reps, [&] {
    for (int i = 0; i < kWrites; ++i)
      BENCH_CU(cuStreamWriteValue64(setup.stream, deviceWord, i, 0));
    synchronize(setup);
  });
  results.set("stream_write_value_us", writes / kWrites * 1e6);
  BENCH_CU(cuMemFreeHost(word));
}

void measureStaging(const Setup& setup, Results& results) {
  static device::cuda::DriverApi api;
  std::string error;
  if (!device::cuda::DriverApi::load(api, error)) {
    std::fprintf(stderr, "staging: %s\n", error.c_str());
    return;
  }
  std::size_t bytes = setup.bytes;
  Device device(bytes);
  Pageable pageable(bytes);
  double best = 0;
  for (unsigned threads : {1U, 4U, 8U}) {
    device::cuda::CudaBackendOptions options;
    options.staging.copyThreads = threads;
    std::unique_ptr<device::cuda::CudaBackend> backend;
    if (!ok(device::cuda::CudaBackend::create(api, options, &backend))) {
      std::fprintf(stderr, "staging: no CUDA backend\n");
      return;
    }
    StreamHandle stream = backend->transferStream(device::TransferDirection::ToDevice);
    auto toDevice = [&] {
      if (!ok(backend->copyToDevice(device.pointer, pageable.data, bytes, stream, false)) ||
          !ok(backend->synchronize(stream)))
        std::exit(1);
    };
    auto toHost = [&] {
      if (!ok(backend->copyToHost(pageable.data, device.pointer, bytes, stream, false))) std::exit(1);
    };
    toDevice(); // allocates the ring
    double up = gigabytesPerSecond(bytes, fastest(setup.repetitions, toDevice));
    double down = gigabytesPerSecond(bytes, fastest(setup.repetitions, toHost));
    results.set("staged_h2d_" + std::to_string(threads) + "_threads_GBps", up);
    results.set("staged_d2h_" + std::to_string(threads) + "_threads_GBps", down);
    best = std::max(best, up);
  }
  results.set("staged_h2d_best_GBps", best);
}

void measureManagerLaunch(const Setup& setup, Results& results) {
  static device::cuda::DriverApi api;
  std::string error;
  if (!device::cuda::DriverApi::load(api, error)) return;
  constexpr int kLaunches = 20000;
  for (unsigned coalesce : {0U, 50U}) {
    device::cuda::CudaBackendOptions options;
    options.fenceCoalesceMicroseconds = coalesce;
    std::unique_ptr<device::cuda::CudaBackend> backend;
    if (!ok(device::cuda::CudaBackend::create(api, options, &backend))) return;
    MemoryManager manager(ManagerOptions{}, *backend); // the configuration's defaults
    DevicePtr region = 0;
    if (!ok(manager.allocate(1 << 20, &region))) return;
    void* params[] = {&region};
    device::KernelLaunch launch;
    launch.function = reinterpret_cast<FunctionHandle>(setup.empty);
    launch.block[0] = 32;
    launch.stream = reinterpret_cast<StreamHandle>(setup.stream);
    launch.params = params;
    auto run = [&](int count) {
      for (int i = 0; i < count; ++i)
        if (!ok(manager.launch(launch))) std::exit(1);
      synchronize(setup);
      manager.poll();
    };
    run(1000);
    double best = fastest(setup.repetitions, [&] { run(kLaunches); });
    results.set("manager_launch_us_fence_coalesce_" + std::to_string(coalesce) + "us", best / kLaunches * 1e6);
    if (!ok(manager.synchronizeAll()) || !ok(manager.free(region))) std::exit(1);
  }
}

void measureLazyLoad(const Setup& setup, Results& results) {
  std::size_t bytes = setup.bytes;
  Pageable source(bytes);
  Device device(bytes);
  long long before = mqxCounter("bytes_to_device");
  double call = 1e300;
  double total = fastest(setup.repetitions, [&] {
    call = std::min(call, seconds([&] { BENCH_CU(cuMemcpyHtoD(device.pointer, source.data, bytes)); }));
    launchTouch(setup, device.pointer);
    synchronize(setup);
  });
  results.set("lazy_load_then_kernel_GBps", gigabytesPerSecond(bytes, total));
  results.set("lazy_copy_call_us", call * 1e6);
  results.set("lazy_bytes_loaded", static_cast<double>(mqxCounter("bytes_to_device") - before));
}

void measureEviction(const Setup& setup, Results& results) {
  // The limit leaves room for `big` but not for one more page: every launch
  // on `small` evicts all of `big` (dirty), and maps one page.
  Device big(setup.bytes);
  Device small(kSmallBytes);
  Setup smallSetup = setup;
  smallSetup.bytes = kSmallBytes;
  auto fillOutput = [&](const Setup& which, CUdeviceptr region, std::uint32_t value) {
    adviseOutput(region);
    launchFill(which, region, value);
    synchronize(setup);
  };
  fillOutput(setup, big.pointer, 1);
  fillOutput(smallSetup, small.pointer, 2); // warm-up: the first eviction also grows the swap buffer
  double kernel = fastest(setup.repetitions, [&] { fillOutput(smallSetup, small.pointer, 3); });
  long long writtenBefore = mqxCounter("bytes_written_back");
  double best = 1e300;
  double sum = 0;
  for (int i = 0; i < setup.repetitions; ++i) {
    fillOutput(setup, big.pointer, 4 + i); // resident and dirty again (not measured)
    double t = seconds([&] { fillOutput(smallSetup, small.pointer, 10 + i); });
    best = std::min(best, t - kernel);
    sum += t - kernel;
  }
  results.set("small_fill_ms", kernel * 1e3);
  results.set("evict_best_GBps", gigabytesPerSecond(setup.bytes, best));
  results.set("evict_mean_GBps", gigabytesPerSecond(setup.bytes, sum / setup.repetitions));
  results.set("evict_bytes_written_back", static_cast<double>(mqxCounter("bytes_written_back") - writtenBefore));
}

} // namespace mqx::bench
