// bench/gpu/host_block_growth.cpp: what growing the swap buffer costs on a GPU host, per
// 64 MiB chunk (bench/peers found the fill phase slow beyond the device). Build and run:
//   build/bench/gpu/mqx-host-block-growth (built with the GPU benchmark)
// How long creating a pinned host block (cuMemCreate, HOST_NUMA) takes, per 64 MiB,
// against cuMemHostAlloc and plain malloc+touch: the swap buffer's growth cost.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "cuda_context.hpp"
static void check(CUresult r, const char* call) { if (r != CUDA_SUCCESS) { const char* n; cuGetErrorName(r, &n); std::printf("%s: %s\n", call, n); std::exit(1); } }
#define CHECK(x) check((x), #x)
int main() {
  mqx::bench::usePrimaryContext(0, check);
  CUcontext ctx; CHECK(cuCtxGetCurrent(&ctx)); // the workers' threads make it theirs
  const size_t bytes = 64ull << 20; const int count = 32;
  CUmemAllocationProp prop{}; prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA; prop.location.id = 0;
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::vector<CUmemGenericAllocationHandle> handles(count);
  auto t0 = now(); for (auto& h : handles) CHECK(cuMemCreate(&h, bytes, &prop, 0)); auto t1 = now();
  std::printf("cuMemCreate HOST_NUMA 64 MiB: %.2f ms each\n", ms(t0, t1) / count);
  CUdeviceptr view; CHECK(cuMemAddressReserve(&view, bytes * count, 0, 0, 0));
  t0 = now(); for (int i = 0; i < count; ++i) CHECK(cuMemMap(view + i * bytes, bytes, 0, handles[i], 0)); t1 = now();
  std::printf("cuMemMap: %.3f ms each\n", ms(t0, t1) / count);
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE; access[0].location.id = 0; access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA; access[1].location.id = 0; access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  t0 = now(); for (int i = 0; i < count; ++i) CHECK(cuMemSetAccess(view + i * bytes, bytes, access, 2)); t1 = now();
  std::printf("cuMemSetAccess device+host 64 MiB: %.2f ms each\n", ms(t0, t1) / count);
  for (int i = 0; i < count; ++i) CHECK(cuMemUnmap(view + i * bytes, bytes));
  t0 = now(); for (auto& h : handles) CHECK(cuMemRelease(h)); t1 = now();
  std::printf("cuMemRelease: %.2f ms each\n", ms(t0, t1) / count);
  std::vector<void*> hosts(count);
  t0 = now(); for (auto& p : hosts) CHECK(cuMemHostAlloc(&p, bytes, 0)); t1 = now();
  std::printf("cuMemHostAlloc 64 MiB: %.2f ms each\n", ms(t0, t1) / count);
  for (auto p : hosts) cuMemFreeHost(p);
  t0 = now(); for (auto& p : hosts) { p = std::malloc(bytes); std::memset(p, 1, bytes); } t1 = now();
  std::printf("malloc+memset 64 MiB: %.2f ms each\n", ms(t0, t1) / count);
  t0 = now(); for (auto p : hosts) CHECK(cuMemHostRegister(p, bytes, 0)); t1 = now();
  std::printf("cuMemHostRegister 64 MiB (touched): %.2f ms each\n", ms(t0, t1) / count);
  // The same creation (cuMemCreate + map + access) from several threads at
  // once: whether growing the swap buffer can run in parallel.
  for (int threads : {1, 2, 4, 8}) {
    std::vector<CUmemGenericAllocationHandle> made(count);
    CUdeviceptr range; CHECK(cuMemAddressReserve(&range, bytes * count, 0, 0, 0));
    t0 = now();
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w)
      workers.emplace_back([&, w] {
        cuCtxSetCurrent(ctx);
        for (int i = w; i < count; i += threads) {
          CHECK(cuMemCreate(&made[i], bytes, &prop, 0));
          CHECK(cuMemMap(range + i * bytes, bytes, 0, made[i], 0));
          CHECK(cuMemSetAccess(range + i * bytes, bytes, access, 2));
        }
      });
    for (auto& worker : workers) worker.join();
    t1 = now();
    std::printf("create+map+access, %d threads: %.2f ms per 64 MiB (%.1f GB/s)\n", threads, ms(t0, t1) / count,
                bytes * count / (ms(t0, t1) / 1e3) / 1e9);
    for (int i = 0; i < count; ++i) { CHECK(cuMemUnmap(range + i * bytes, bytes)); CHECK(cuMemRelease(made[i])); }
    CHECK(cuMemAddressFree(range, bytes * count));
  }
  return 0;
}
