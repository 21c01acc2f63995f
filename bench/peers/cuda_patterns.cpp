// mqx-peers-cuda: the peer benchmark's CUDA C++ workload (issue 14), one run
// in its own process. FOOTPRINT bytes of 64 MiB buffers, filled, then touched
// (read and rewritten by a kernel) in one of two patterns:
//   streaming  every buffer in order, PASSES times: the cyclic scan that
//              defeats LRU (each buffer is evicted just before its reuse);
//   random     PASSES x buffers touches, 80% of them to a hot fifth of the
//              buffers (seeded): the reuse a replacement policy can exploit.
// Prints one JSON line: fill, touch and total seconds and an exact checksum.
// The system is chosen outside (natively, under LD_PRELOAD=libmqx.so), or
// --managed: Unified Memory (cuMemAllocManaged, preferred location the device).
//
//   mqx-peers-cuda --kernels CUBIN --footprint BYTES --pattern streaming|random
//                  [--passes N] [--seed S] [--managed]
#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cuda_context.hpp"

namespace {

constexpr std::size_t kBufferBytes = std::size_t{64} << 20;
constexpr std::size_t kElements = kBufferBytes / sizeof(std::uint32_t);

struct Options {
  std::string kernels;
  std::size_t footprint = 0;
  std::string pattern = "streaming";
  unsigned passes = 4;
  unsigned seed = 1;
  bool managed = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "mqx-peers-cuda: %s\nusage: mqx-peers-cuda --kernels CUBIN --footprint BYTES --pattern "
               "streaming|random [--passes N] [--seed S] [--managed]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("no value after " + argument).c_str());
      return argv[++i];
    };
    if (argument == "--kernels") {
      options.kernels = value();
    } else if (argument == "--footprint") {
      options.footprint = std::strtoull(value().c_str(), nullptr, 10);
    } else if (argument == "--pattern") {
      options.pattern = value();
    } else if (argument == "--passes") {
      options.passes = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    } else if (argument == "--seed") {
      options.seed = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    } else if (argument == "--managed") {
      options.managed = true;
    } else {
      usage(("unknown argument " + argument).c_str());
    }
  }
  if (options.kernels.empty() || options.footprint < kBufferBytes) usage("--kernels and --footprint >= 64 MiB");
  if (options.pattern != "streaming" && options.pattern != "random") usage("--pattern is streaming or random");
  if (options.passes == 0) usage("--passes must be at least 1");
  return options;
}

// A failed call ends the run with a JSON line saying which; out of memory is
// a result (native runs past the device), not an error.
void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::printf("{\"status\": \"%s\", \"error\": \"%s: %s\"}\n",
              result == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "failed", call, name != nullptr ? name : "?");
  std::exit(result == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1);
}
#define CHECK(call) check((call), #call)

double seconds(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

} // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const auto started = std::chrono::steady_clock::now();
  const CUdevice device = mqx::bench::usePrimaryContext(0, check);
  CUmodule module;
  CHECK(cuModuleLoad(&module, options.kernels.c_str()));
  CUfunction fill, update, checksum;
  CHECK(cuModuleGetFunction(&fill, module, "fill"));
  CHECK(cuModuleGetFunction(&update, module, "update"));
  CHECK(cuModuleGetFunction(&checksum, module, "checksum"));
  int multiprocessors = 0;
  CHECK(cuDeviceGetAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  const unsigned blocks = static_cast<unsigned>(multiprocessors) * 4;

  const std::size_t count = options.footprint / kBufferBytes;
  std::vector<CUdeviceptr> buffers(count);
  std::size_t elements = kElements;
  auto launch = [&](CUfunction function, CUdeviceptr buffer, void* third) {
    void* params[] = {&buffer, &elements, third};
    CHECK(cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  };
  for (std::size_t i = 0; i < count; ++i) {
    if (options.managed) {
      CHECK(cuMemAllocManaged(&buffers[i], kBufferBytes, CU_MEM_ATTACH_GLOBAL));
      CUmemLocation location{CU_MEM_LOCATION_TYPE_DEVICE, static_cast<int>(device)};
      CHECK(cuMemAdvise_v2(buffers[i], kBufferBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, location));
    } else {
      CHECK(cuMemAlloc(&buffers[i], kBufferBytes));
    }
    std::uint32_t id = static_cast<std::uint32_t>(i);
    launch(fill, buffers[i], &id);
  }
  CHECK(cuCtxSynchronize());
  const double fillSeconds = seconds(started);

  const auto touching = std::chrono::steady_clock::now();
  std::mt19937 random(options.seed);
  const std::size_t hot = std::max<std::size_t>(1, count / 5);
  const std::size_t touches = std::size_t{options.passes} * count;
  for (std::size_t touch = 0; touch < touches; ++touch) {
    std::size_t index = touch % count;
    if (options.pattern == "random")
      index = random() % 5 != 0 ? random() % hot : hot + random() % std::max<std::size_t>(1, count - hot);
    std::uint32_t salt = static_cast<std::uint32_t>(touch);
    launch(update, buffers[index % count], &salt);
  }
  CHECK(cuCtxSynchronize());
  const double touchSeconds = seconds(touching);

  CUdeviceptr sum;
  CHECK(cuMemAlloc(&sum, sizeof(unsigned long long)));
  CHECK(cuMemsetD8(sum, 0, sizeof(unsigned long long)));
  for (CUdeviceptr buffer : buffers)
    launch(checksum, buffer, &sum);
  unsigned long long total = 0;
  CHECK(cuMemcpyDtoH(&total, sum, sizeof(total)));
  std::printf(
      "{\"status\": \"ok\", \"pattern\": \"%s\", \"buffers\": %zu, \"footprint_bytes\": %zu, \"touches\": %zu, "
      "\"bytes_touched\": %zu, \"fill_s\": %.6f, \"steps_s\": %.6f, \"total_s\": %.6f, \"checksum\": \"%llu\"}\n",
      options.pattern.c_str(), count, count * kBufferBytes, touches, touches * kBufferBytes, fillSeconds, touchSeconds,
      seconds(started), total);
  for (CUdeviceptr buffer : buffers)
    cuMemFree(buffer);
  return 0;
}
