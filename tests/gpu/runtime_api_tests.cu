// The GPU suite through the CUDA runtime API (cudart): built twice, with the
// static cudart (nvcc's default: the driver is reached through dlopen, dlsym
// and cuGetProcAddress) and with the shared one (as PyTorch and CuPy use it).
// Each scenario checks its results and exits non-zero on a mismatch; run with
// libmqx preloaded and MQX_MEMORY_DEVICE_MEMORY_LIMIT set, or natively.
//
//   runtime_api_tests SCENARIO|all
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda_runtime_check.cuh"
#include "gpu_check.hpp"
#include "mqx/advice.h"

using gpu_test::blocksFor;
using gpu_test::deviceLimit;
using gpu_test::fillKernel;
using gpu_test::kThreads;
using gpu_test::mqxActive;
using gpu_test::mqxStatistic;
using gpu_test::pattern;

namespace {

__global__ void addKernel(std::uint32_t* data, std::size_t n, std::uint32_t delta) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += delta;
}

__global__ void copyKernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i];
}

// Pointers inside structs passed by value: found by scanning parameter bytes.
struct Pair {
  const std::uint32_t* in;
  std::uint32_t* out;
  std::size_t n;
};
__global__ void pairKernel(Pair pair) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pair.n; i += gridDim.x * blockDim.x)
    pair.out[i] = pair.in[i] + 1;
}

struct Gather {
  int tag;
  const std::uint32_t* parts[4];
  std::uint32_t* out;
  std::size_t n;
};
__global__ void gatherKernel(Gather gather) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < gather.n; i += gridDim.x * blockDim.x) {
    std::uint32_t sum = 0;
    for (int k = 0; k < 4; ++k)
      sum += gather.parts[k][i];
    gather.out[i] = sum;
  }
}

// Pointers the parameter scan cannot see: they live in device memory.
__global__ void tableKernel(std::uint32_t* const* table, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    table[1][i] = table[0][i] * 2;
}

std::uint32_t* deviceBuffer(std::size_t elements) {
  std::uint32_t* pointer = nullptr;
  CUDA_OK(cudaMalloc(&pointer, elements * sizeof(std::uint32_t)));
  return pointer;
}

std::vector<std::uint32_t> download(const std::uint32_t* device, std::size_t elements) {
  std::vector<std::uint32_t> host(elements);
  CUDA_OK(cudaMemcpy(host.data(), device, elements * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

void expectPattern(const std::vector<std::uint32_t>& host, std::uint32_t seed, std::uint32_t plus,
                   std::size_t offset = 0) {
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (host[i] != pattern(seed, offset + i) + plus) {
      std::fprintf(stderr, "mismatch at %zu: %u != %u\n", offset + i, host[i], pattern(seed, offset + i) + plus);
      std::exit(1);
    }
  }
}

std::vector<std::uint32_t> hostPattern(std::uint32_t seed, std::size_t elements) {
  std::vector<std::uint32_t> host(elements);
  for (std::size_t i = 0; i < elements; ++i)
    host[i] = pattern(seed, i);
  return host;
}

// Keeps the device busy with other data so that earlier regions are evicted.
void pressure(std::size_t bytes, std::uint32_t seed) {
  std::size_t n = bytes / sizeof(std::uint32_t);
  std::uint32_t* filler = deviceBuffer(n);
  fillKernel<<<blocksFor(n), kThreads>>>(filler, n, seed);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(filler));
}

// A single process allocating and using twice the device memory limit.
void oversubscribe() {
  constexpr int kBuffers = 8;
  std::size_t bytes = 2 * deviceLimit() / kBuffers;
  std::size_t n = bytes / sizeof(std::uint32_t);
  std::uint32_t* buffers[kBuffers];
  for (auto& buffer : buffers)
    buffer = deviceBuffer(n);
  for (int b = 0; b < kBuffers; ++b)
    fillKernel<<<blocksFor(n), kThreads>>>(buffers[b], n, b + 1);
  for (int round = 0; round < 2; ++round)
    for (int b = 0; b < kBuffers; ++b)
      addKernel<<<blocksFor(n), kThreads>>>(buffers[b], n, 1);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  for (int b = 0; b < kBuffers; ++b)
    expectPattern(download(buffers[b], n), b + 1, 2);
  for (auto* buffer : buffers)
    CUDA_OK(cudaFree(buffer));
  if (mqxActive()) GPU_CHECK(mqxStatistic("evictions") > 0);
}

// A lazy copy, then the source changes: the device must see the old data.
void lazyCopyThenModify() {
  std::size_t n = (32u << 20) / sizeof(std::uint32_t);
  std::vector<std::uint32_t> source = hostPattern(7, n);
  std::uint32_t* device = deviceBuffer(n);
  std::uint32_t* out = deviceBuffer(n);
  CUDA_OK(cudaMemcpy(device, source.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  std::fill(source.begin(), source.end(), 0xDEADBEEFU);
  copyKernel<<<blocksFor(n), kThreads>>>(device, out, n);
  CUDA_OK(cudaGetLastError());
  expectPattern(download(out, n), 7, 0);
  expectPattern(download(device, n), 7, 0);

  // The asynchronous form: the source may change as soon as the call returns.
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  source = hostPattern(8, n);
  CUDA_OK(cudaMemcpyAsync(device, source.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream));
  for (std::size_t i = 0; i < n; i += 1024)
    source[i] = 0; // sparse writes: one fault per page
  pressure(deviceLimit() / 2, 99);
  addKernel<<<blocksFor(n), kThreads, 0, stream>>>(device, n, 5);
  CUDA_OK(cudaStreamSynchronize(stream));
  expectPattern(download(device, n), 8, 5);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(device));
  CUDA_OK(cudaFree(out));
}

// Frees of copy sources while their lazy copies are pending.
void freeSource() {
  std::size_t n = (64u << 20) / sizeof(std::uint32_t);
  std::uint32_t* device = deviceBuffer(n);
  auto check = [&](std::uint32_t seed, std::size_t elements) {
    pressure(deviceLimit() / 2, 98);
    expectPattern(download(device, elements), seed, 0);
  };
  // Large malloc: mmap-backed, free() unmaps it; the range is then reused.
  auto* big = static_cast<std::uint32_t*>(std::malloc(n * sizeof(std::uint32_t)));
  for (std::size_t i = 0; i < n; ++i)
    big[i] = pattern(31, i);
  CUDA_OK(cudaMemcpy(device, big, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  std::free(big);
  auto* reuse = static_cast<std::uint32_t*>(std::malloc(n * sizeof(std::uint32_t)));
  std::memset(reuse, 0x77, n * sizeof(std::uint32_t));
  check(31, n);
  std::free(reuse);
  // Small heap buffer (below any copy-on-write threshold is fine too).
  std::size_t small = 4096;
  auto* heap = new std::uint32_t[small];
  for (std::size_t i = 0; i < small; ++i)
    heap[i] = pattern(32, i);
  CUDA_OK(cudaMemcpy(device, heap, small * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  delete[] heap;
  check(32, small);
  // realloc moves the buffer.
  auto* moving = static_cast<std::uint32_t*>(std::malloc(n / 2 * sizeof(std::uint32_t)));
  for (std::size_t i = 0; i < n / 2; ++i)
    moving[i] = pattern(33, i);
  CUDA_OK(cudaMemcpy(device, moving, n / 2 * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  moving = static_cast<std::uint32_t*>(std::realloc(moving, n * sizeof(std::uint32_t)));
  std::memset(moving, 0x55, n * sizeof(std::uint32_t));
  check(33, n / 2);
  std::free(moving);
  CUDA_OK(cudaFree(device));
}

void memsets() {
  std::size_t bytes = 16u << 20;
  auto* device = reinterpret_cast<std::uint8_t*>(deviceBuffer(bytes / 4));
  CUDA_OK(cudaMemset(device, 0x5A, bytes));
  CUDA_OK(cudaMemset(device + (1u << 20) + 3, 0x11, 1000));
  std::vector<std::uint8_t> host(bytes);
  CUDA_OK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < bytes; ++i) {
    bool inside = i >= (1u << 20) + 3 && i < (1u << 20) + 1003;
    GPU_CHECK_EQ(host[i], inside ? 0x11 : 0x5A);
  }
  // A kernel sees the fill.
  auto* words = reinterpret_cast<std::uint32_t*>(device);
  CUDA_OK(cudaMemset(device, 0x01, bytes));
  addKernel<<<blocksFor(bytes / 4), kThreads>>>(words, bytes / 4, 1);
  CUDA_OK(cudaGetLastError());
  for (std::uint32_t value : download(words, bytes / 4))
    GPU_CHECK_EQ(value, 0x01010102U);
  // Asynchronous memset on a stream, evicted before it is read.
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  CUDA_OK(cudaMemsetAsync(device, 0, bytes, stream));
  addKernel<<<blocksFor(bytes / 4), kThreads, 0, stream>>>(words, bytes / 4, 9);
  CUDA_OK(cudaStreamSynchronize(stream));
  pressure(deviceLimit() * 3 / 4, 97);
  for (std::uint32_t value : download(words, bytes / 4))
    GPU_CHECK_EQ(value, 9U);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(device));
  // Pitched memset and pitched copy back.
  std::size_t width = 1000;
  std::size_t height = 300;
  std::size_t pitch = 0;
  void* pitched = nullptr;
  CUDA_OK(cudaMallocPitch(&pitched, &pitch, width, height));
  GPU_CHECK(pitch >= width);
  CUDA_OK(cudaMemset2D(pitched, pitch, 0x33, width, height));
  std::vector<std::uint8_t> rows(width * height);
  CUDA_OK(cudaMemcpy2D(rows.data(), width, pitched, pitch, width, height, cudaMemcpyDeviceToHost));
  for (std::uint8_t value : rows)
    GPU_CHECK_EQ(value, 0x33);
  CUDA_OK(cudaFree(pitched));
}

// Data written by kernels, evicted, then read back piecewise and whole.
void evictThenRead() {
  constexpr int kBuffers = 4;
  std::size_t bytes = deviceLimit() / 2;
  std::size_t n = bytes / sizeof(std::uint32_t);
  std::uint32_t* buffers[kBuffers];
  for (int b = 0; b < kBuffers; ++b) {
    buffers[b] = deviceBuffer(n);
    fillKernel<<<blocksFor(n), kThreads>>>(buffers[b], n, 40 + b);
  }
  CUDA_OK(cudaDeviceSynchronize());
  std::size_t page = 8u << 20; // the paper's page (gpu.small_pages.*)
  for (int b = 0; b < kBuffers; ++b) {
    // Across a page boundary, at the very end, then everything.
    std::size_t first = page / 4 - 100;
    std::vector<std::uint32_t> piece(200);
    CUDA_OK(cudaMemcpy(piece.data(), buffers[b] + first, 200 * 4, cudaMemcpyDeviceToHost));
    expectPattern(piece, 40 + b, 0, first);
    CUDA_OK(cudaMemcpy(piece.data(), buffers[b] + n - 200, 200 * 4, cudaMemcpyDeviceToHost));
    expectPattern(piece, 40 + b, 0, n - 200);
  }
  for (int b = 0; b < kBuffers; ++b)
    expectPattern(download(buffers[b], n), 40 + b, 0);
  // A partial host-to-device copy into an evicted region merges with it.
  std::vector<std::uint32_t> patch(1024, 0xABCDEF01U);
  CUDA_OK(cudaMemcpy(buffers[0] + 4096, patch.data(), patch.size() * 4, cudaMemcpyHostToDevice));
  addKernel<<<blocksFor(n), kThreads>>>(buffers[0], n, 1);
  std::vector<std::uint32_t> all = download(buffers[0], n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t expected = (i >= 4096 && i < 4096 + 1024) ? 0xABCDEF02U : pattern(40, i) + 1;
    GPU_CHECK_EQ(all[i], expected);
  }
  for (auto* buffer : buffers)
    CUDA_OK(cudaFree(buffer));
  if (mqxActive()) GPU_CHECK(mqxStatistic("bytes_written_back") > 0);
}

void structParameters() {
  std::size_t bytes = deviceLimit() / 4;
  std::size_t n = bytes / sizeof(std::uint32_t);
  std::uint32_t* in = deviceBuffer(n);
  std::uint32_t* out = deviceBuffer(n);
  std::vector<std::uint32_t> source = hostPattern(51, n);
  CUDA_OK(cudaMemcpy(in, source.data(), bytes, cudaMemcpyHostToDevice));
  pressure(deviceLimit() * 3 / 4, 96);
  pairKernel<<<blocksFor(n), kThreads>>>(Pair{in, out, n});
  CUDA_OK(cudaGetLastError());
  expectPattern(download(out, n), 51, 1);

  std::size_t partElements = n / 2;
  Gather gather{};
  gather.tag = 7;
  for (int k = 0; k < 4; ++k) {
    auto* part = deviceBuffer(partElements);
    fillKernel<<<blocksFor(partElements), kThreads>>>(part, partElements, 60 + k);
    gather.parts[k] = part;
  }
  gather.out = out;
  gather.n = partElements;
  pressure(deviceLimit() * 3 / 4, 95);
  gatherKernel<<<blocksFor(partElements), kThreads>>>(gather);
  CUDA_OK(cudaGetLastError());
  std::vector<std::uint32_t> result = download(out, partElements);
  for (std::size_t i = 0; i < partElements; ++i) {
    std::uint32_t sum = 0;
    for (int k = 0; k < 4; ++k)
      sum += pattern(60 + k, i);
    GPU_CHECK_EQ(result[i], sum);
  }
  for (int k = 0; k < 4; ++k)
    CUDA_OK(cudaFree(const_cast<std::uint32_t*>(gather.parts[k])));
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

void advice() {
  GPU_CHECK_EQ(cudaAdvice(nullptr, 0), 1);
  GPU_CHECK_EQ(cudaAdvice(nullptr, 4), 1);
  std::size_t bytes = deviceLimit() / 4;
  std::size_t n = bytes / sizeof(std::uint32_t);
  std::uint32_t* in = deviceBuffer(n);
  std::uint32_t* out = deviceBuffer(n);
  std::uint32_t** table = nullptr;
  CUDA_OK(cudaMalloc(&table, 2 * sizeof(std::uint32_t*)));
  std::uint32_t* pointers[2] = {in, out};
  CUDA_OK(cudaMemcpy(table, pointers, sizeof(pointers), cudaMemcpyHostToDevice));
  if (mqxActive()) {
    static int host = 0;
    GPU_CHECK_EQ(cudaAdvice(&host, MQX_ADVICE_INPUT), 1); // not a managed address
  }
  std::vector<std::uint32_t> source = hostPattern(71, n);
  CUDA_OK(cudaMemcpy(in, source.data(), bytes, cudaMemcpyHostToDevice));
  pressure(deviceLimit() * 3 / 4, 94);
  // The kernel reaches `in` and `out` only through `table`: advice says so.
  GPU_CHECK_EQ(cudaAdvice(in, MQX_ADVICE_INPUT), 0);
  GPU_CHECK_EQ(cudaAdvice(out, MQX_ADVICE_OUTPUT), 0);
  GPU_CHECK_EQ(cudaAdvice(table, MQX_ADVICE_INPUT), 0);
  tableKernel<<<blocksFor(n), kThreads>>>(table, n);
  CUDA_OK(cudaGetLastError());
  std::vector<std::uint32_t> result = download(out, n);
  for (std::size_t i = 0; i < n; ++i)
    GPU_CHECK_EQ(result[i], pattern(71, i) * 2);
  CUDA_OK(cudaFree(table));
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

void severalStreams() {
  constexpr int kStreams = 4;
  std::size_t bytes = deviceLimit() / 4;
  std::size_t n = bytes / sizeof(std::uint32_t);
  cudaStream_t streams[kStreams];
  std::uint32_t* a[kStreams];
  std::uint32_t* b[kStreams];
  std::uint32_t* pinned[kStreams];
  std::vector<std::vector<std::uint32_t>> sources;
  for (int k = 0; k < kStreams; ++k) {
    CUDA_OK(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
    a[k] = deviceBuffer(n);
    b[k] = deviceBuffer(n);
    CUDA_OK(cudaMallocHost(&pinned[k], bytes));
    sources.push_back(hostPattern(80 + k, n));
  }
  for (std::uint32_t iteration = 0; iteration < 3; ++iteration) {
    for (int k = 0; k < kStreams; ++k) {
      CUDA_OK(cudaMemcpyAsync(a[k], sources[k].data(), bytes, cudaMemcpyHostToDevice, streams[k]));
      addKernel<<<blocksFor(n), kThreads, 0, streams[k]>>>(a[k], n, iteration);
      copyKernel<<<blocksFor(n), kThreads, 0, streams[k]>>>(a[k], b[k], n);
      CUDA_OK(cudaMemcpyAsync(pinned[k], b[k], bytes, cudaMemcpyDeviceToHost, streams[k]));
    }
    for (int k = 0; k < kStreams; ++k) {
      CUDA_OK(cudaStreamSynchronize(streams[k]));
      expectPattern(std::vector<std::uint32_t>(pinned[k], pinned[k] + n), 80 + k, iteration);
    }
  }
  // A dependency across streams through an event.
  cudaEvent_t written;
  CUDA_OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  fillKernel<<<blocksFor(n), kThreads, 0, streams[0]>>>(a[0], n, 90);
  CUDA_OK(cudaEventRecord(written, streams[0]));
  CUDA_OK(cudaStreamWaitEvent(streams[1], written, 0));
  copyKernel<<<blocksFor(n), kThreads, 0, streams[1]>>>(a[0], b[1], n);
  CUDA_OK(cudaMemcpyAsync(pinned[1], b[1], bytes, cudaMemcpyDeviceToHost, streams[1]));
  CUDA_OK(cudaEventSynchronize(written));
  CUDA_OK(cudaStreamSynchronize(streams[1]));
  expectPattern(std::vector<std::uint32_t>(pinned[1], pinned[1] + n), 90, 0);
  CUDA_OK(cudaEventDestroy(written));
  for (int k = 0; k < kStreams; ++k) {
    CUDA_OK(cudaStreamDestroy(streams[k]));
    CUDA_OK(cudaFree(a[k]));
    CUDA_OK(cudaFree(b[k]));
    CUDA_OK(cudaFreeHost(pinned[k]));
  }
}

} // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void()>> scenarios = {
      {"oversubscribe", oversubscribe},
      {"lazy_copy", lazyCopyThenModify},
      {"free_source", freeSource},
      {"memsets", memsets},
      {"evict_read", evictThenRead},
      {"struct_params", structParameters},
      {"advice", advice},
      {"streams", severalStreams},
  };
  std::string which = argc > 1 ? argv[1] : "all";
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  std::printf("runtime_api_tests %s: limit %zu MiB, mqx %s\n", which.c_str(), deviceLimit() >> 20,
              mqxActive() ? "active" : (gpu_test::mqxPreloaded() ? "preloaded" : "absent"));
  for (const auto& [name, run] : scenarios) {
    if (which != "all" && which != name) continue;
    run();
    std::printf("  %s: ok\n", name.c_str());
  }
  if (which != "all" && scenarios.count(which) == 0) {
    std::fprintf(stderr, "unknown scenario %s\n", which.c_str());
    return 2;
  }
  // Under LD_PRELOAD the run must really have been managed.
  if (gpu_test::mqxPreloaded()) GPU_CHECK(mqxActive());
  return 0;
}
