// bench/gpu/host_block_contextless.cpp: can a node daemon create the pinned host blocks it
// lends (cuMemCreate, HOST_NUMA, exportable as POSIX fds) without a CUDA context, and so
// without the ~520 MiB of device memory that a context holds (docs/daemon.md, "Lent host
// blocks")? The pool is off by default because of that memory and the pinned bytes.
//
// Steps, each timed and checked, NVML's free device memory read before and after:
//   1. cuInit only, no context: create N blocks, reserve a view, map them, open them to the CPU
//      alone, write a pattern from the CPU, export each as an fd;
//   2. then the primary context (what a borrower has): import the fds, map them with device
//      access, copy each block to the device and back, and check every word.
// Build and run: build/bench/gpu/mqx-host-block-contextless [--blocks N]  (64 MiB each, default 16)
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kBlockBytes = 64ull << 20;
constexpr std::size_t kWords = kBlockBytes / sizeof(std::uint64_t);

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::printf("%s failed: %s\n", call, name != nullptr ? name : "unknown error");
  std::exit(1);
}
#define CHECK(call) check((call), #call)

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// NVML's free memory of device 0, in MiB (-1 when NVML cannot say): dlopen'd, as mqxd does.
double nvmlFreeMiB() {
  static void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (library == nullptr) return -1;
  struct Memory {
    unsigned long long total, free, used;
  };
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
  auto byIndex = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  auto info = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(library, "nvmlDeviceGetMemoryInfo"));
  if (init == nullptr || byIndex == nullptr || info == nullptr || init() != 0) return -1;
  void* device = nullptr;
  Memory memory{};
  if (byIndex(0, &device) != 0 || info(device, &memory) != 0) return -1;
  return memory.free / 1048576.0;
}

std::uint64_t pattern(std::size_t block, std::size_t word) {
  return 0x3c3c000000000000ull ^ (std::uint64_t(block) << 36) ^ word;
}

void report(const char* what, double ms, std::size_t blocks) {
  std::printf("%s: %.3f ms per 64 MiB (%.1f GB/s)\n", what, ms / blocks, kBlockBytes * blocks / (ms / 1e3) / 1e9);
}

} // namespace

int main(int argc, char** argv) {
  std::size_t blocks = 16;
  if (argc == 3 && std::strcmp(argv[1], "--blocks") == 0) blocks = std::strtoul(argv[2], nullptr, 10);
  if (blocks == 0 || blocks > 256) {
    std::printf("usage: %s [--blocks N]  (1..256 blocks of 64 MiB)\n", argv[0]);
    return 2;
  }
  const double freeBefore = nvmlFreeMiB();
  CHECK(cuInit(0));
  CUcontext current = nullptr;
  CHECK(cuCtxGetCurrent(&current));
  std::printf("no context current: %s\n", current == nullptr ? "yes" : "no");

  // 1. Without a context.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::vector<CUmemGenericAllocationHandle> handles(blocks);
  auto start = Clock::now();
  for (auto& handle : handles)
    CHECK(cuMemCreate(&handle, kBlockBytes, &prop, 0));
  report("contextless cuMemCreate HOST_NUMA", msSince(start), blocks);
  CUdeviceptr view = 0;
  CHECK(cuMemAddressReserve(&view, kBlockBytes * blocks, 0, 0, 0));
  start = Clock::now();
  CUmemAccessDesc hostAccess{};
  hostAccess.location = prop.location;
  hostAccess.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (std::size_t i = 0; i < blocks; ++i) {
    CHECK(cuMemMap(view + i * kBlockBytes, kBlockBytes, 0, handles[i], 0));
    CHECK(cuMemSetAccess(view + i * kBlockBytes, kBlockBytes, &hostAccess, 1));
  }
  report("contextless map + host-only access", msSince(start), blocks);
  start = Clock::now();
  for (std::size_t b = 0; b < blocks; ++b) {
    auto* words = reinterpret_cast<std::uint64_t*>(view + b * kBlockBytes);
    for (std::size_t w = 0; w < kWords; ++w)
      words[w] = pattern(b, w);
  }
  report("contextless CPU write", msSince(start), blocks);
  std::vector<int> fds(blocks, -1);
  for (std::size_t i = 0; i < blocks; ++i)
    CHECK(cuMemExportToShareableHandle(&fds[i], handles[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CHECK(cuCtxGetCurrent(&current));
  const double freeContextless = nvmlFreeMiB();
  std::printf("still no context current: %s\n", current == nullptr ? "yes" : "no");
  std::printf("device free MiB: before %.0f, after the contextless blocks %.0f (took %.0f)\n", freeBefore,
              freeContextless, freeBefore - freeContextless);

  // 2. As a borrower: a context, the fds imported and checked through the device.
  CUdevice device = 0;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  const double freeContext = nvmlFreeMiB();
  std::printf("device free MiB with a primary context: %.0f (the context took %.0f)\n", freeContext,
              freeContextless - freeContext);
  CUdeviceptr imported = 0;
  CHECK(cuMemAddressReserve(&imported, kBlockBytes * blocks, 0, 0, 0));
  CUmemAccessDesc access[2] = {};
  access[0].location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1] = hostAccess;
  std::vector<CUmemGenericAllocationHandle> importedHandles(blocks);
  start = Clock::now();
  for (std::size_t i = 0; i < blocks; ++i) {
    CHECK(cuMemImportFromShareableHandle(&importedHandles[i],
                                         reinterpret_cast<void*>(static_cast<std::intptr_t>(fds[i])),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CHECK(cuMemMap(imported + i * kBlockBytes, kBlockBytes, 0, importedHandles[i], 0));
    CHECK(cuMemSetAccess(imported + i * kBlockBytes, kBlockBytes, access, 2));
  }
  report("import + map + device and host access", msSince(start), blocks);
  CUdeviceptr buffer = 0;
  CHECK(cuMemAlloc(&buffer, kBlockBytes));
  double toDeviceMs = 0, toHostMs = 0;
  std::size_t wrong = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    start = Clock::now();
    CHECK(cuMemcpyHtoD(buffer, reinterpret_cast<void*>(imported + b * kBlockBytes), kBlockBytes));
    CHECK(cuCtxSynchronize());
    toDeviceMs += msSince(start);
    CHECK(cuMemsetD32(imported + b * kBlockBytes, 0, kBlockBytes / 4)); // the device clears the block
    CHECK(cuCtxSynchronize());
    start = Clock::now();
    CHECK(cuMemcpyDtoH(reinterpret_cast<void*>(imported + b * kBlockBytes), buffer, kBlockBytes));
    CHECK(cuCtxSynchronize());
    toHostMs += msSince(start);
    // Read through the contextless view: the same memory.
    const auto* words = reinterpret_cast<const std::uint64_t*>(view + b * kBlockBytes);
    for (std::size_t w = 0; w < kWords; ++w)
      wrong += words[w] != pattern(b, w);
  }
  report("copy to device through the imported view", toDeviceMs, blocks);
  report("copy to host through the imported view", toHostMs, blocks);
  std::printf("words wrong after the round trip, read through the contextless view: %zu of %zu\n", wrong,
              kWords * blocks);
  CHECK(cuMemFree(buffer));
  for (std::size_t i = 0; i < blocks; ++i) {
    CHECK(cuMemUnmap(imported + i * kBlockBytes, kBlockBytes));
    CHECK(cuMemRelease(importedHandles[i]));
    CHECK(cuMemUnmap(view + i * kBlockBytes, kBlockBytes));
    CHECK(cuMemRelease(handles[i]));
    close(fds[i]);
  }
  CHECK(cuMemAddressFree(imported, kBlockBytes * blocks));
  CHECK(cuMemAddressFree(view, kBlockBytes * blocks));
  CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("%s\n", wrong == 0 ? "PASS" : "FAIL");
  return wrong == 0 ? 0 : 1;
}
