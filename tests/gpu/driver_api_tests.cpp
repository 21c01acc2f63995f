// The GPU suite through the driver API only (linked against libcuda: the
// direct symbol binding route). Covers what cudart does not reach: packed
// `extra` parameters, cuLaunchKernelEx and cooperative launches, 16/32-bit
// and pitched memsets, 2D/3D copies, pointer queries, cuMemGetInfo.
//
//   driver_api_tests KERNELS.cubin SCENARIO|all
#include <cstddef>
#include <cuda.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpu_check.hpp"

using gpu_test::deviceLimit;
using gpu_test::mqxActive;
using gpu_test::mqxStatistic;
using gpu_test::pattern;

#define CU_OK(call)                                                                                                    \
  do {                                                                                                                 \
    CUresult cu_ok_result_ = (call);                                                                                   \
    if (cu_ok_result_ != CUDA_SUCCESS) {                                                                               \
      const char* cu_ok_name_ = "?";                                                                                   \
      cuGetErrorName(cu_ok_result_, &cu_ok_name_);                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cu_ok_name_);                                 \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace {

struct Kernels {
  CUfunction fill, add, copy, pair, addThroughTable;
} kernels;

constexpr unsigned kThreads = 256;
unsigned blocksFor(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 4096));
}

void launch(CUfunction function, std::size_t n, std::vector<void*> params, CUstream stream = nullptr) {
  CU_OK(cuLaunchKernel(function, blocksFor(n), 1, 1, kThreads, 1, 1, 0, stream, params.data(), nullptr));
}

void fill(CUdeviceptr data, std::size_t n, std::uint32_t seed, CUstream stream = nullptr) {
  launch(kernels.fill, n, {&data, &n, &seed}, stream);
}
void add(CUdeviceptr data, std::size_t n, std::uint32_t delta, CUstream stream = nullptr) {
  launch(kernels.add, n, {&data, &n, &delta}, stream);
}

CUdeviceptr allocate(std::size_t bytes) {
  CUdeviceptr pointer = 0;
  CU_OK(cuMemAlloc(&pointer, bytes));
  return pointer;
}

std::vector<std::uint32_t> download(CUdeviceptr device, std::size_t elements) {
  std::vector<std::uint32_t> host(elements);
  CU_OK(cuMemcpyDtoH(host.data(), device, elements * 4));
  return host;
}

void expectPattern(const std::vector<std::uint32_t>& host, std::uint32_t seed, std::uint32_t plus) {
  for (std::size_t i = 0; i < host.size(); ++i)
    GPU_CHECK_EQ(host[i], pattern(seed, i) + plus);
}

void pressure(std::uint32_t seed) {
  std::size_t bytes = deviceLimit() * 3 / 4;
  CUdeviceptr filler = allocate(bytes);
  fill(filler, bytes / 4, seed);
  CU_OK(cuCtxSynchronize());
  CU_OK(cuMemFree(filler));
}

void oversubscribe() {
  constexpr int kBuffers = 8;
  std::size_t bytes = 2 * deviceLimit() / kBuffers;
  std::size_t n = bytes / 4;
  CUdeviceptr buffers[kBuffers];
  for (int b = 0; b < kBuffers; ++b) {
    buffers[b] = allocate(bytes);
    fill(buffers[b], n, b + 1);
  }
  for (int b = 0; b < kBuffers; ++b)
    add(buffers[b], n, 3);
  CU_OK(cuCtxSynchronize());
  for (int b = 0; b < kBuffers; ++b)
    expectPattern(download(buffers[b], n), b + 1, 3);
  for (CUdeviceptr buffer : buffers)
    CU_OK(cuMemFree(buffer));
  if (mqxActive()) GPU_CHECK(mqxStatistic("evictions") > 0);
}

// Parameters packed in one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER), and
// cuLaunchKernelEx, both on evicted data.
void launchForms() {
  std::size_t n = deviceLimit() / 4 / 4;
  CUdeviceptr data = allocate(n * 4);
  fill(data, n, 11);
  pressure(91);
  struct alignas(8) Packed {
    CUdeviceptr data;
    std::size_t n;
    std::uint32_t delta;
  } packed{data, n, 5};
  // The kernel's parameters end after `delta`: the buffer size must say so,
  // not include the struct's tail padding.
  std::size_t packedBytes = offsetof(Packed, delta) + sizeof(packed.delta);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packedBytes,
                   CU_LAUNCH_PARAM_END};
  CU_OK(cuLaunchKernel(kernels.add, blocksFor(n), 1, 1, kThreads, 1, 1, 0, nullptr, nullptr, extra));
  expectPattern(download(data, n), 11, 5);

  pressure(92);
  CUlaunchConfig config{};
  config.gridDimX = blocksFor(n);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  std::uint32_t delta = 2;
  void* params[] = {&data, &n, &delta};
  CU_OK(cuLaunchKernelEx(&config, kernels.add, params, nullptr));
  expectPattern(download(data, n), 11, 7);

  pressure(93);
  int numBlocks = 0;
  CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&numBlocks, kernels.add, kThreads, 0));
  CUdevice device;
  CU_OK(cuCtxGetDevice(&device));
  int sms = 0;
  CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  delta = 1;
  CU_OK(cuLaunchCooperativeKernel(kernels.add, static_cast<unsigned>(sms), 1, 1, kThreads, 1, 1, 0, nullptr, params));
  expectPattern(download(data, n), 11, 8);
  CU_OK(cuMemFree(data));
}

void memsets() {
  std::size_t bytes = 8u << 20;
  CUdeviceptr data = allocate(bytes);
  CU_OK(cuMemsetD8(data, 0x12, bytes));
  CU_OK(cuMemsetD16(data + 4096, 0x3456, 1000));
  CU_OK(cuMemsetD32(data + 65536, 0x789ABCDEU, 5000));
  pressure(94);
  std::vector<std::uint8_t> host(bytes);
  CU_OK(cuMemcpyDtoH(host.data(), data, bytes));
  for (std::size_t i = 0; i < bytes; ++i) {
    std::uint8_t expected = 0x12;
    if (i >= 4096 && i < 4096 + 2000) expected = (i % 2 == 0) ? 0x56 : 0x34;
    if (i >= 65536 && i < 65536 + 20000) expected = std::uint8_t(0x789ABCDEU >> (8 * (i % 4)));
    GPU_CHECK_EQ(host[i], expected);
  }
  // Pitched and asynchronous forms.
  CUstream stream;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::size_t pitch = 4096;
  std::size_t width = 1000; // 32-bit elements per row
  std::size_t height = 64;
  CU_OK(cuMemsetD8Async(data, 0, bytes, stream));
  CU_OK(cuMemsetD2D32Async(data, pitch, 0x01020304U, width, height, stream));
  CU_OK(cuStreamSynchronize(stream));
  CU_OK(cuMemcpyDtoH(host.data(), data, bytes));
  for (std::size_t row = 0; row < height + 1; ++row) {
    for (std::size_t column = 0; column < pitch; ++column) {
      std::size_t i = row * pitch + column;
      bool inside = row < height && column < width * 4;
      GPU_CHECK_EQ(host[i], inside ? std::uint8_t(0x01020304U >> (8 * (column % 4))) : 0);
    }
  }
  CU_OK(cuStreamDestroy(stream));
  CU_OK(cuMemFree(data));
}

void pitchedCopies() {
  std::size_t width = 3000; // bytes per row
  std::size_t height = 200;
  CUdeviceptr pitched = 0;
  std::size_t pitch = 0;
  CU_OK(cuMemAllocPitch(&pitched, &pitch, width, height, 4));
  GPU_CHECK(pitch >= width);
  std::size_t hostPitch = 3072;
  std::vector<std::uint8_t> source(hostPitch * height);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<std::uint8_t>(i * 7 + 3);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = source.data();
  up.srcPitch = hostPitch;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = pitched;
  up.dstPitch = pitch;
  up.WidthInBytes = width;
  up.Height = height;
  CU_OK(cuMemcpy2D(&up));
  pressure(95);
  std::vector<std::uint8_t> back(width * height, 0);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  down.srcDevice = pitched;
  down.srcPitch = pitch;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = width;
  down.WidthInBytes = width;
  down.Height = height;
  CU_OK(cuMemcpy2D(&down));
  for (std::size_t row = 0; row < height; ++row)
    GPU_CHECK(std::memcmp(&back[row * width], &source[row * hostPitch], width) == 0);

  // 3D: a 64 x 32 x 8 box out of a larger host volume, through a managed one.
  std::size_t w = 64, h = 32, d = 8, hostW = 100, hostH = 40;
  std::vector<std::uint8_t> volume(hostW * hostH * 10);
  for (std::size_t i = 0; i < volume.size(); ++i)
    volume[i] = static_cast<std::uint8_t>(i * 13 + 1);
  CUdeviceptr box = allocate(w * h * d);
  CUDA_MEMCPY3D in{};
  in.srcMemoryType = CU_MEMORYTYPE_HOST;
  in.srcHost = volume.data();
  in.srcXInBytes = 5;
  in.srcY = 3;
  in.srcZ = 1;
  in.srcPitch = hostW;
  in.srcHeight = hostH;
  in.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  in.dstDevice = box;
  in.dstPitch = w;
  in.dstHeight = h;
  in.WidthInBytes = w;
  in.Height = h;
  in.Depth = d;
  CU_OK(cuMemcpy3D(&in));
  std::vector<std::uint8_t> flat(w * h * d);
  CU_OK(cuMemcpyDtoH(flat.data(), box, flat.size()));
  for (std::size_t z = 0; z < d; ++z)
    for (std::size_t y = 0; y < h; ++y)
      for (std::size_t x = 0; x < w; ++x)
        GPU_CHECK_EQ(flat[(z * h + y) * w + x], volume[((z + 1) * hostH + y + 3) * hostW + x + 5]);

  // Unified cuMemcpy in every direction, and device-to-device.
  std::size_t n = 1u << 20;
  CUdeviceptr a = allocate(n * 4);
  CUdeviceptr b = allocate(n * 4);
  std::vector<std::uint32_t> words(n);
  for (std::size_t i = 0; i < n; ++i)
    words[i] = pattern(17, i);
  CU_OK(cuMemcpy(a, reinterpret_cast<CUdeviceptr>(words.data()), n * 4));
  CU_OK(cuMemcpyDtoD(b, a, n * 4));
  add(b, n, 1);
  std::vector<std::uint32_t> result(n);
  CU_OK(cuMemcpy(reinterpret_cast<CUdeviceptr>(result.data()), b, n * 4));
  expectPattern(result, 17, 1);
  CU_OK(cuMemcpy(a, b, n * 4));
  expectPattern(download(a, n), 17, 1);
  for (CUdeviceptr p : {pitched, box, a, b})
    CU_OK(cuMemFree(p));
}

void pointerQueries() {
  std::size_t bytes = 40u << 20;
  CUdeviceptr data = allocate(bytes);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CU_OK(cuMemGetAddressRange(&base, &size, data + 12345));
  GPU_CHECK_EQ(base, data);
  GPU_CHECK(size >= bytes);
  unsigned type = 0;
  CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, data + 100));
  GPU_CHECK_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  CUcontext context = nullptr;
  CUcontext current = nullptr;
  CU_OK(cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, data));
  CU_OK(cuCtxGetCurrent(&current));
  GPU_CHECK(context == current);
  CUdeviceptr start = 0;
  CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, data + 999));
  GPU_CHECK_EQ(start, data);
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  unsigned memoryType = 0;
  CUdeviceptr devicePointer = 0;
  void* values[] = {&memoryType, &devicePointer};
  CU_OK(cuPointerGetAttributes(2, attributes, values, data + 8));
  GPU_CHECK_EQ(memoryType, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  GPU_CHECK_EQ(devicePointer, data + 8);
  std::size_t free = 0;
  std::size_t total = 0;
  CU_OK(cuMemGetInfo(&free, &total));
  GPU_CHECK(free <= total);
  if (mqxActive()) GPU_CHECK_EQ(total, deviceLimit());
  // Boolean attributes are written as wide as the driver writes them (the
  // driver's answer for pinned host memory, never mqx's, is the reference):
  // a narrower answer leaves the caller's upper bytes as they were.
  void* pinned = nullptr;
  CU_OK(cuMemAllocHost(&pinned, 4096));
  for (const CUpointer_attribute flag : {CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPED}) {
    unsigned driver = 0xaaaaaaaau;
    unsigned ours = 0xaaaaaaaau;
    CU_OK(cuPointerGetAttribute(&driver, flag, reinterpret_cast<CUdeviceptr>(pinned)));
    CU_OK(cuPointerGetAttribute(&ours, flag, data));
    GPU_CHECK_EQ(driver >> 8 == 0xaaaaaau, ours >> 8 == 0xaaaaaau);
    ours = 0xaaaaaaaau;
    void* value[] = {&ours};
    CUpointer_attribute one[] = {flag};
    CU_OK(cuPointerGetAttributes(1, one, value, data));
    GPU_CHECK_EQ(driver >> 8 == 0xaaaaaau, ours >> 8 == 0xaaaaaau);
  }
  CU_OK(cuMemFreeHost(pinned));
  CU_OK(cuMemFree(data));
}

void lazyCopyThenModify() {
  std::size_t n = (32u << 20) / 4;
  std::vector<std::uint32_t> source(n);
  for (std::size_t i = 0; i < n; ++i)
    source[i] = pattern(5, i);
  CUdeviceptr data = allocate(n * 4);
  CU_OK(cuMemcpyHtoD(data, source.data(), n * 4));
  std::fill(source.begin(), source.end(), 0U);
  pressure(96);
  add(data, n, 1);
  expectPattern(download(data, n), 5, 1);
  CU_OK(cuMemFree(data));
}

// A lazy copy from pinned memory that the program then frees with
// cuMemFreeHost: the pending bytes must survive (cuda-samples'
// simpleMultiCopy segfaulted).
void pinnedSourceFreed() {
  std::size_t n = (16u << 20) / 4;
  void* pinned = nullptr;
  CU_OK(cuMemAllocHost(&pinned, n * 4));
  auto* words = static_cast<std::uint32_t*>(pinned);
  for (std::size_t i = 0; i < n; ++i)
    words[i] = pattern(6, i);
  CUdeviceptr data = allocate(n * 4);
  CU_OK(cuMemcpyHtoDAsync(data, pinned, n * 4, nullptr));
  CU_OK(cuCtxSynchronize());
  CU_OK(cuMemFreeHost(pinned));
  pressure(97);
  add(data, n, 2);
  expectPattern(download(data, n), 6, 2);
  CU_OK(cuMemFree(data));
}

// A kernel whose operand is named only by a pointer table in device memory,
// written there by a (lazy) copy, while the operand has been evicted: every
// page stays mapped, with its bytes (docs/architecture.md).
void pointerTable() {
  std::size_t n = deviceLimit() / 2 / 4;
  CUdeviceptr data = allocate(n * 4);
  fill(data, n, 12);
  struct {
    CUdeviceptr data;
    std::size_t n;
    std::uint32_t delta;
  } entry{data, n, 9};
  CUdeviceptr table = allocate(sizeof entry);
  CU_OK(cuMemcpyHtoD(table, &entry, sizeof entry));
  pressure(93);
  launch(kernels.addThroughTable, n, {&table});
  expectPattern(download(data, n), 12, 9);
  CU_OK(cuMemFree(table));
  CU_OK(cuMemFree(data));
}

// One launch that needs more than the limit: what gets no device memory
// runs from host memory.
void launchOverTheLimit() {
  std::size_t n = deviceLimit() * 3 / 4 / 4;
  CUdeviceptr in = allocate(n * 4);
  CUdeviceptr out = allocate(n * 4);
  fill(in, n, 14);
  launch(kernels.copy, n, {&in, &out, &n});
  expectPattern(download(out, n), 14, 0);
  CU_OK(cuMemFree(in));
  CU_OK(cuMemFree(out));
}

// A graph captured from a stream (a kernel, a memset and copies on managed
// memory), replayed after its data was evicted.
void capturedGraph() {
  std::size_t n = deviceLimit() / 4 / 4;
  CUdeviceptr data = allocate(n * 4);
  CUdeviceptr copy = allocate(n * 4);
  fill(data, n, 15);
  CUstream stream = nullptr;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  add(data, n, 1, stream);
  CU_OK(cuMemsetD32Async(copy, 0, n, stream));
  CU_OK(cuMemcpyDtoDAsync(copy, data, n * 4, stream));
  CUgraph graph = nullptr;
  CU_OK(cuStreamEndCapture(stream, &graph));
  CUgraphExec exec = nullptr;
  CU_OK(cuGraphInstantiate(&exec, graph, 0));
  for (std::uint32_t replay = 1; replay <= 3; ++replay) {
    pressure(90 + replay);
    CU_OK(cuGraphLaunch(exec, stream));
    CU_OK(cuStreamSynchronize(stream));
    expectPattern(download(copy, n), 15, replay);
  }
  CU_OK(cuGraphExecDestroy(exec));
  CU_OK(cuGraphDestroy(graph));
  CU_OK(cuStreamDestroy(stream));
  CU_OK(cuMemFree(copy));
  CU_OK(cuMemFree(data));
}

void severalStreams() {
  constexpr int kStreams = 3;
  std::size_t n = deviceLimit() / 4 / 4;
  CUstream streams[kStreams];
  CUdeviceptr buffers[kStreams];
  void* pinned[kStreams];
  for (int k = 0; k < kStreams; ++k) {
    CU_OK(cuStreamCreate(&streams[k], CU_STREAM_NON_BLOCKING));
    buffers[k] = allocate(n * 4);
    CU_OK(cuMemHostAlloc(&pinned[k], n * 4, 0));
  }
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (int k = 0; k < kStreams; ++k) {
      fill(buffers[k], n, 20 + k, streams[k]);
      add(buffers[k], n, round, streams[k]);
      CU_OK(cuMemcpyDtoHAsync(pinned[k], buffers[k], n * 4, streams[k]));
    }
    for (int k = 0; k < kStreams; ++k) {
      CU_OK(cuStreamSynchronize(streams[k]));
      auto* words = static_cast<std::uint32_t*>(pinned[k]);
      expectPattern(std::vector<std::uint32_t>(words, words + n), 20 + k, round);
    }
  }
  for (int k = 0; k < kStreams; ++k) {
    CU_OK(cuStreamDestroy(streams[k]));
    CU_OK(cuMemFree(buffers[k]));
    CU_OK(cuMemFreeHost(pinned[k]));
  }
}

// Batched copies (cuMemcpyBatchAsync, CUDA 13's ABI) into memory with a
// lazy copy pending: the batch's bytes must win over the pending image
// after an eviction (a driver copy mqx did not see would leave the lazy
// image to be loaded later), and a copy out of managed memory in the same
// batch reads what a kernel wrote.
void batchedCopies() {
  const std::size_t n = (16u << 20) / 4;
  std::vector<std::uint32_t> stale(n);
  for (std::size_t i = 0; i < n; ++i)
    stale[i] = pattern(40, i);
  CUdeviceptr lazy = allocate(n * 4);
  CUdeviceptr written = allocate(n * 4);
  CU_OK(cuMemcpyHtoD(lazy, stale.data(), n * 4)); // lazy under mqx: nothing moves yet
  fill(written, n, 41);
  void* pinned = nullptr;
  CU_OK(cuMemAllocHost(&pinned, 2 * n * 4));
  auto* fresh = static_cast<std::uint32_t*>(pinned);
  auto* out = fresh + n;
  for (std::size_t i = 0; i < n; ++i)
    fresh[i] = pattern(42, i);
  CUstream stream = nullptr;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuCtxSynchronize());
  CUdeviceptr destinations[] = {lazy, reinterpret_cast<CUdeviceptr>(out)};
  CUdeviceptr sources[] = {reinterpret_cast<CUdeviceptr>(fresh), written};
  std::size_t sizes[] = {n * 4, n * 4};
  CUmemcpyAttributes attributes{};
  attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::size_t attributeIndex = 0;
  CU_OK(cuMemcpyBatchAsync(destinations, sources, sizes, 2, &attributes, &attributeIndex, 1, stream));
  CU_OK(cuStreamSynchronize(stream));
  expectPattern(std::vector<std::uint32_t>(out, out + n), 41, 0);
  pressure(43);
  add(lazy, n, 1);
  expectPattern(download(lazy, n), 42, 1);
  CU_OK(cuStreamDestroy(stream));
  CU_OK(cuMemFreeHost(pinned));
  CU_OK(cuMemFree(written));
  CU_OK(cuMemFree(lazy));
}

// A memory pool of the program's own (cuMemPoolCreate, as RMM's async
// resource and CuPy's MemoryAsyncPool): allocations of 1.25 times the limit
// from it, each filled and read back. Under mqx they are managed regions:
// oversubscribed, with evictions. A pool other processes may import keeps
// the driver's allocations and still works.
void poolAllocations() {
  CUstream stream = nullptr;
  CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmemPoolProps properties{};
  properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = 0;
  CUmemoryPool pool = nullptr;
  CU_OK(cuMemPoolCreate(&pool, &properties));
  const std::size_t bytes = deviceLimit() / 4;
  const std::size_t n = bytes / 4;
  const long long evictionsBefore = mqxActive() ? mqxStatistic("evictions") : 0;
  std::vector<CUdeviceptr> buffers(5);
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    CU_OK(cuMemAllocFromPoolAsync(&buffers[k], bytes, pool, stream));
    fill(buffers[k], n, 50 + static_cast<std::uint32_t>(k), stream);
  }
  CU_OK(cuStreamSynchronize(stream));
  for (std::size_t k = 0; k < buffers.size(); ++k)
    expectPattern(download(buffers[k], n), 50 + static_cast<std::uint32_t>(k), 0);
  if (mqxActive()) GPU_CHECK(mqxStatistic("evictions") > evictionsBefore); // paged, so counted
  for (CUdeviceptr buffer : buffers)
    CU_OK(cuMemFreeAsync(buffer, stream));
  CU_OK(cuStreamSynchronize(stream));
  CU_OK(cuMemPoolDestroy(pool));

  properties.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CU_OK(cuMemPoolCreate(&pool, &properties));
  CUdeviceptr shareable = 0;
  CU_OK(cuMemAllocFromPoolAsync(&shareable, 1u << 20, pool, stream));
  fill(shareable, (1u << 20) / 4, 55, stream);
  CU_OK(cuStreamSynchronize(stream));
  expectPattern(download(shareable, (1u << 20) / 4), 55, 0);
  CU_OK(cuMemFreeAsync(shareable, stream));
  CU_OK(cuStreamSynchronize(stream));
  CU_OK(cuMemPoolDestroy(pool));
  CU_OK(cuStreamDestroy(stream));
}

// An IPC handle of memory mqx manages cannot be given honestly (its
// physical memory changes as pages move): refused with a clear error, where
// natively it succeeds.
// cuIpcGetMemHandle of managed memory (torch.multiprocessing's route): a
// second process (this program again, spawned) opens the handle, finds the
// bytes and adds to them while this one oversubscribes the device around
// the shared allocation; its writes are then here. Natively the driver's
// IPC does the same.
const char* cubinPath = nullptr;

std::string hex(const CUipcMemHandle& handle) {
  std::string out;
  for (char byte : handle.reserved) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(byte));
    out += two;
  }
  return out;
}

int ipcImport(const char* handleHex, std::size_t n, std::uint32_t seed) {
  CUipcMemHandle handle{};
  if (std::strlen(handleHex) != 2 * sizeof handle.reserved) return 3;
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i)
    handle.reserved[i] = static_cast<char>(std::stoul(std::string(handleHex + 2 * i, 2), nullptr, 16));
  CUdeviceptr data = 0;
  CU_OK(cuIpcOpenMemHandle(&data, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  expectPattern(download(data, n), seed, 0);
  add(data, n, 7);
  CU_OK(cuCtxSynchronize());
  CU_OK(cuIpcCloseMemHandle(data));
  return 0;
}

void ipcShared() {
  const std::size_t n = deviceLimit() / 8 / 4 + 1000; // pages and a part
  const std::uint32_t seed = 41;
  CUdeviceptr data = allocate(n * 4);
  fill(data, n, seed);
  CU_OK(cuCtxSynchronize());
  CUipcMemHandle handle{};
  CU_OK(cuIpcGetMemHandle(&handle, data));
  // The rest of the device used twice over while the handle is out.
  constexpr int kBuffers = 6;
  const std::size_t bytes = deviceLimit() * 2 / kBuffers;
  std::vector<CUdeviceptr> others;
  for (int b = 0; b < kBuffers; ++b) {
    others.push_back(allocate(bytes));
    fill(others.back(), bytes / 4, 100 + b);
  }
  CU_OK(cuCtxSynchronize());
  const std::string handleText = hex(handle), count = std::to_string(n), seedText = std::to_string(seed);
  std::vector<char*> arguments = {const_cast<char*>("/proc/self/exe"),
                                  const_cast<char*>(cubinPath),
                                  const_cast<char*>("ipc_import"),
                                  const_cast<char*>(handleText.c_str()),
                                  const_cast<char*>(count.c_str()),
                                  const_cast<char*>(seedText.c_str()),
                                  nullptr};
  pid_t child = 0;
  GPU_CHECK_EQ(posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, arguments.data(), environ), 0);
  int status = -1;
  GPU_CHECK_EQ(waitpid(child, &status, 0), child);
  GPU_CHECK(WIFEXITED(status));
  GPU_CHECK_EQ(WEXITSTATUS(status), 0);
  expectPattern(download(data, n), seed, 7);
  for (int b = 0; b < kBuffers; ++b)
    expectPattern(download(others[b], bytes / 4), 100 + b, 0);
  for (CUdeviceptr other : others)
    CU_OK(cuMemFree(other));
  CU_OK(cuMemFree(data));
  if (mqxActive()) GPU_CHECK(mqxStatistic("evictions") > 0);
}

// The program's own VMM, as PyTorch's expandable segments use it: one
// reserved range, 20 MiB allocations (POSIX file descriptors requested, as
// PyTorch asks) mapped one after another and given access in one call, 1.5
// times the limit together, each filled by a kernel and read back. Under
// mqx they are managed regions, paged (evictions); natively the driver's.
// Exporting one, and mapping one at a second address, work too (below).
void programVmm() {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = 0;
  properties.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t granularity = 0;
  CU_OK(cuMemGetAllocationGranularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const std::size_t piece = (20u << 20) / granularity * granularity;
  const std::size_t count = deviceLimit() * 3 / 2 / piece + 1;
  CUdeviceptr range = 0;
  CU_OK(cuMemAddressReserve(&range, piece * count, 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles(count);
  for (std::size_t k = 0; k < count; ++k) {
    CU_OK(cuMemCreate(&handles[k], piece, &properties, 0));
    CU_OK(cuMemMap(range + k * piece, piece, 0, handles[k], 0));
  }
  CUmemAccessDesc access{};
  access.location = properties.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(cuMemSetAccess(range, piece * count, &access, 1));
  // A process that sees several devices keeps its own VMM with the driver
  // (docs/interposer.md: peer access cannot follow moving pages): then
  // nothing is paged and exporting works, as natively.
  int devices = 0;
  CU_OK(cuDeviceGetCount(&devices));
  const bool managed = mqxActive() && devices == 1;
  const long long evictionsBefore = mqxActive() ? mqxStatistic("evictions") : 0;
  const std::size_t n = piece / 4;
  for (std::size_t k = 0; k < count; ++k)
    fill(range + k * piece, n, 60 + static_cast<std::uint32_t>(k));
  for (std::size_t k = 0; k < count; ++k)
    add(range + k * piece, n, 1);
  for (std::size_t k = 0; k < count; ++k)
    expectPattern(download(range + k * piece, n), 60 + static_cast<std::uint32_t>(k), 1);
  if (managed) GPU_CHECK(mqxStatistic("evictions") > evictionsBefore);
  if (mqxActive() && !managed) GPU_CHECK_EQ(mqxStatistic("evictions"), evictionsBefore);
  // Exported (under mqx its pages move onto one shareable physical
  // allocation, at 64 MiB pages and at the small-pages variant's 8 MiB), then
  // imported here at a second range, where its bytes are.
  int descriptor = -1;
  const CUresult exported =
      cuMemExportToShareableHandle(&descriptor, handles[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  GPU_CHECK_EQ(static_cast<int>(exported), static_cast<int>(CUDA_SUCCESS));
  if (exported == CUDA_SUCCESS) {
    CUmemGenericAllocationHandle imported = 0;
    CU_OK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<std::intptr_t>(descriptor)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(descriptor);
    CUdeviceptr second = 0;
    CU_OK(cuMemAddressReserve(&second, piece, 0, 0, 0));
    CU_OK(cuMemMap(second, piece, 0, imported, 0));
    CU_OK(cuMemSetAccess(second, piece, &access, 1));
    expectPattern(download(second, n), 60, 1);
    add(second, n, 2); // and written there, seen at the first address
    CU_OK(cuCtxSynchronize());
    expectPattern(download(range, n), 60, 3);
    CU_OK(cuMemUnmap(second, piece));
    CU_OK(cuMemRelease(imported));
    CU_OK(cuMemAddressFree(second, piece));
  }
  // The second handle mapped at a second address too, as the driver allows:
  // the same bytes at both, and either unmapped on its own.
  CUdeviceptr alias = 0;
  CU_OK(cuMemAddressReserve(&alias, piece, 0, 0, 0));
  CU_OK(cuMemMap(alias, piece, 0, handles[1], 0));
  CU_OK(cuMemSetAccess(alias, piece, &access, 1));
  expectPattern(download(alias, n), 61, 1);
  add(alias, n, 4);
  CU_OK(cuCtxSynchronize());
  expectPattern(download(range + piece, n), 61, 5);
  CU_OK(cuMemUnmap(alias, piece));
  CU_OK(cuMemAddressFree(alias, piece));
  expectPattern(download(range + piece, n), 61, 5);
  for (std::size_t k = 0; k < count; ++k) {
    CU_OK(cuMemUnmap(range + k * piece, piece));
    CU_OK(cuMemRelease(handles[k]));
  }
  CU_OK(cuMemAddressFree(range, piece * count));
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KERNELS.cubin [SCENARIO|all]\n", argv[0]);
    return 2;
  }
  if (cuInit(0) != CUDA_SUCCESS) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  CUdevice device;
  CUcontext context;
  CU_OK(cuDeviceGet(&device, 0));
  CU_OK(cuDevicePrimaryCtxRetain(&context, device));
  CU_OK(cuCtxSetCurrent(context));
  CUmodule module;
  CU_OK(cuModuleLoad(&module, argv[1]));
  CU_OK(cuModuleGetFunction(&kernels.fill, module, "fill"));
  CU_OK(cuModuleGetFunction(&kernels.add, module, "add"));
  CU_OK(cuModuleGetFunction(&kernels.copy, module, "copy"));
  CU_OK(cuModuleGetFunction(&kernels.pair, module, "pair"));
  CU_OK(cuModuleGetFunction(&kernels.addThroughTable, module, "addThroughTable"));
  cubinPath = argv[1];
  // ipc_shared's second process: ipc_import HANDLE ELEMENTS SEED.
  if (argc == 6 && std::string(argv[2]) == "ipc_import")
    return ipcImport(argv[3], std::stoul(argv[4]), static_cast<std::uint32_t>(std::stoul(argv[5])));

  const std::map<std::string, std::function<void()>> scenarios = {
      {"oversubscribe", oversubscribe},
      {"launch_forms", launchForms},
      {"memsets", memsets},
      {"pitched_copies", pitchedCopies},
      {"pointer_queries", pointerQueries},
      {"lazy_copy", lazyCopyThenModify},
      {"streams", severalStreams},
      {"pinned_source_freed", pinnedSourceFreed},
      {"pointer_table", pointerTable},
      {"launch_over_the_limit", launchOverTheLimit},
      {"captured_graph", capturedGraph},
      {"batched_copies", batchedCopies},
      {"pool_allocations", poolAllocations},
      {"ipc_shared", ipcShared},
      {"program_vmm", programVmm},
  };
  std::string which = argc > 2 ? argv[2] : "all";
  if (which != "all" && scenarios.count(which) == 0) {
    std::fprintf(stderr, "unknown scenario %s\n", which.c_str());
    return 2;
  }
  std::printf("driver_api_tests %s: limit %zu MiB, mqx %s\n", which.c_str(), deviceLimit() >> 20,
              mqxActive() ? "active" : (gpu_test::mqxPreloaded() ? "preloaded" : "absent"));
  for (const auto& [name, run] : scenarios) {
    if (which != "all" && which != name) continue;
    run();
    std::printf("  %s: ok\n", name.c_str());
  }
  if (gpu_test::mqxPreloaded()) GPU_CHECK(mqxActive());
  CU_OK(cuModuleUnload(module));
  CU_OK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
