// Several GPUs in one process (docs/interposer.md, "Several devices"), through
// the shared cudart: allocations on each device with cudaSetDevice, peer
// copies between two devices' allocations, and oversubscription of one device
// while the other is busy. Each scenario checks its results; skips (77) with
// fewer than two devices. Run with libmqx preloaded and
// MQX_MEMORY_DEVICE_MEMORY_LIMIT set (a limit per device), or natively.
//
//   multi_device_tests SCENARIO|all
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_check.cuh"
#include "gpu_check.hpp"

using gpu_test::blocksFor;
using gpu_test::deviceLimit;
using gpu_test::fillKernel;
using gpu_test::kThreads;
using gpu_test::mqxActive;
using gpu_test::mqxStatistic;
using gpu_test::pattern;

namespace {

__global__ void addKernel(std::uint32_t* data, std::size_t n, std::uint32_t delta, int repeat) {
  for (int r = 0; r < repeat; ++r)
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
      data[i] += delta;
}

std::uint32_t* deviceBuffer(int device, std::size_t n) {
  CUDA_OK(cudaSetDevice(device));
  std::uint32_t* buffer = nullptr;
  CUDA_OK(cudaMalloc(&buffer, n * sizeof(std::uint32_t)));
  return buffer;
}

std::vector<std::uint32_t> download(int device, const std::uint32_t* buffer, std::size_t n) {
  CUDA_OK(cudaSetDevice(device));
  std::vector<std::uint32_t> host(n);
  CUDA_OK(cudaMemcpy(host.data(), buffer, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

void expectPattern(const std::vector<std::uint32_t>& values, std::uint32_t seed, std::uint32_t added,
                   const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != pattern(seed, i) + added) {
      std::fprintf(stderr, "%s: element %zu is %u, want %u\n", what, i, values[i], pattern(seed, i) + added);
      std::exit(1);
    }
  }
}

// The statistic `name` of `device`'s manager (-1 without mqx).
long long statisticOf(int device, const char* name) {
  CUDA_OK(cudaSetDevice(device));
  return mqxStatistic(name);
}

// Each device allocates, computes and answers pointer queries for its own
// memory.
void allocateEach() {
  const std::size_t n = (64u << 20) / sizeof(std::uint32_t);
  std::uint32_t* buffers[2];
  for (int device = 0; device < 2; ++device) {
    buffers[device] = deviceBuffer(device, n);
    fillKernel<<<blocksFor(n), kThreads>>>(buffers[device], n, 10 + device);
    CUDA_OK(cudaGetLastError());
  }
  for (int device = 0; device < 2; ++device) {
    expectPattern(download(device, buffers[device], n), 10 + device, 0, "allocate_each");
    cudaPointerAttributes attributes{};
    CUDA_OK(cudaPointerGetAttributes(&attributes, buffers[device] + 5));
    GPU_CHECK_EQ(attributes.device, device);
    GPU_CHECK_EQ(static_cast<int>(attributes.type), static_cast<int>(cudaMemoryTypeDevice));
  }
  // cudaMemcpy with the other device current: unified addressing finds the
  // source's device.
  CUDA_OK(cudaSetDevice(0));
  std::vector<std::uint32_t> host(n);
  CUDA_OK(cudaMemcpy(host.data(), buffers[1], n * sizeof(std::uint32_t), cudaMemcpyDefault));
  expectPattern(host, 11, 0, "allocate_each: device 1's memory read with device 0 current");
  for (int device = 0; device < 2; ++device) {
    CUDA_OK(cudaSetDevice(device));
    CUDA_OK(cudaFree(buffers[device]));
  }
}

// Copies between two devices' allocations, blocking and on a stream, both
// directions, and whole and in part.
void peerCopy() {
  const std::size_t n = (96u << 20) / sizeof(std::uint32_t);
  std::uint32_t* zero = deviceBuffer(0, n);
  std::uint32_t* one = deviceBuffer(1, n);
  CUDA_OK(cudaSetDevice(0));
  fillKernel<<<blocksFor(n), kThreads>>>(zero, n, 21);
  CUDA_OK(cudaMemcpyPeer(one, 1, zero, 0, n * sizeof(std::uint32_t)));
  expectPattern(download(1, one, n), 21, 0, "cudaMemcpyPeer 0 -> 1");

  CUDA_OK(cudaSetDevice(1));
  addKernel<<<blocksFor(n), kThreads>>>(one, n, 5, 1);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaMemcpyPeerAsync(zero, 0, one, 1, n * sizeof(std::uint32_t), stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  expectPattern(download(0, zero, n), 21, 5, "cudaMemcpyPeerAsync 1 -> 0");

  // Part of a buffer, through cudaMemcpy with unified addressing.
  CUDA_OK(cudaSetDevice(0));
  fillKernel<<<blocksFor(n), kThreads>>>(zero, n, 22);
  const std::size_t half = n / 2;
  CUDA_OK(cudaMemcpy(one + half, zero + half, (n - half) * sizeof(std::uint32_t), cudaMemcpyDefault));
  std::vector<std::uint32_t> result = download(1, one, n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = i < half ? pattern(21, i) + 5 : pattern(22, i);
    if (result[i] != want) {
      std::fprintf(stderr, "cudaMemcpy 0 -> 1, half: element %zu is %u, want %u\n", i, result[i], want);
      std::exit(1);
    }
  }
  CUDA_OK(cudaSetDevice(1));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(one));
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(zero));
}

// Device 0 works over twice its limit while device 1 runs long kernels on
// data that fits: device 0 evicts, device 1 never does, both are right.
void evictOneWhileOtherBusy() {
  const std::size_t limit = deviceLimit();
  constexpr int kBuffers = 8;
  const std::size_t n = 2 * limit / kBuffers / sizeof(std::uint32_t);
  const std::size_t busyN = limit / 4 / sizeof(std::uint32_t);
  std::uint32_t* busy = deviceBuffer(1, busyN);
  fillKernel<<<blocksFor(busyN), kThreads>>>(busy, busyN, 40);
  CUDA_OK(cudaDeviceSynchronize());
  const long long evictionsBefore = statisticOf(1, "evictions");
  std::thread other([&] {
    CUDA_OK(cudaSetDevice(1));
    for (int round = 0; round < 20; ++round)
      addKernel<<<blocksFor(busyN), kThreads>>>(busy, busyN, 1, 50);
    CUDA_OK(cudaDeviceSynchronize());
  });
  std::uint32_t* buffers[kBuffers];
  for (int b = 0; b < kBuffers; ++b) {
    buffers[b] = deviceBuffer(0, n);
    fillKernel<<<blocksFor(n), kThreads>>>(buffers[b], n, b + 1);
  }
  for (int round = 0; round < 2; ++round)
    for (int b = 0; b < kBuffers; ++b)
      addKernel<<<blocksFor(n), kThreads>>>(buffers[b], n, 1, 1);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  other.join();
  for (int b = 0; b < kBuffers; ++b)
    expectPattern(download(0, buffers[b], n), b + 1, 2, "device 0 over its limit");
  expectPattern(download(1, busy, busyN), 40, 20 * 50, "device 1 busy");
  if (mqxActive()) {
    GPU_CHECK(statisticOf(0, "evictions") > 0);
    GPU_CHECK_EQ(statisticOf(1, "evictions"), evictionsBefore);
  }
  for (int b = 0; b < kBuffers; ++b) {
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(buffers[b]));
  }
  CUDA_OK(cudaSetDevice(1));
  CUDA_OK(cudaFree(busy));
}

} // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void()>> scenarios = {
      {"allocate_each", allocateEach},
      {"peer_copy", peerCopy},
      {"evict_one_while_other_busy", evictOneWhileOtherBusy},
  };
  const std::string which = argc > 1 ? argv[1] : "all";
  if (which != "all" && scenarios.count(which) == 0) {
    std::fprintf(stderr, "unknown scenario %s\n", which.c_str());
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
    std::printf("fewer than two CUDA devices (%d): skipping\n", devices);
    return 77;
  }
  std::printf("multi_device_tests %s: %d devices, limit %zu MiB per device, mqx %s\n", which.c_str(), devices,
              deviceLimit() >> 20, mqxActive() ? "active" : (gpu_test::mqxPreloaded() ? "preloaded" : "absent"));
  for (const auto& [name, run] : scenarios) {
    if (which != "all" && which != name) continue;
    run();
    std::printf("  %s: ok\n", name.c_str());
  }
  if (gpu_test::mqxPreloaded()) GPU_CHECK(mqxActive());
  return 0;
}
