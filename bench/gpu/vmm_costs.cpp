// mqx-vmm-costs: what CUDA virtual memory management costs on this GPU, the
// numbers behind the eviction path's design (docs/interposer.md):
//  - cuMemUnmap + cuMemRelease per page, one call per page vs one call over
//    a run of adjacent pages;
//  - whether cuMemUnmap waits for copies still running on another stream
//    (if it does, unmapping cannot be overlapped with write-backs);
//  - mapping host-located blocks (the always-mapped design's host backing,
//    docs/architecture.md decision 2) under device ranges: one
//    cuMemSetAccess per page vs one over a run, idle and during a copy;
//  - which of cuMemCreate, cuMemMap and cuMemSetAccess makes a device page's
//    mapping slow while a copy runs (issue 31: physical memory reused rather
//    than created per page saves only what cuMemCreate costs there).
// Usage: mqx-vmm-costs [--page-mib N] (default 8; 512 MiB of pages in all).
// Prints one JSON object (vmm_costs_report.hpp).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vmm_costs_report.hpp"

namespace {

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Pages {
  CUdeviceptr base = 0;
  std::size_t pageBytes = 0;
  std::vector<CUmemGenericAllocationHandle> handles;
};

CUmemAllocationProp properties() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

void mapPages(Pages& pages, std::size_t count) {
  CUmemAllocationProp prop = properties();
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  pages.handles.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    check(cuMemCreate(&pages.handles[i], pages.pageBytes, &prop, 0), "cuMemCreate");
    check(cuMemMap(pages.base + i * pages.pageBytes, pages.pageBytes, 0, pages.handles[i], 0), "cuMemMap");
    check(cuMemSetAccess(pages.base + i * pages.pageBytes, pages.pageBytes, &access, 1), "cuMemSetAccess");
  }
}

// The median of `samples` (sorted in place).
double median(std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Each step of a device page's mapping timed on its own, `rounds` times, each
// round while a 1 GiB device-to-host copy runs on `stream` (or idle without
// one), issued as one call per `chunkBytes`: cuMemCreate, cuMemMap of the
// handle just created, cuMemSetAccess. The chunks say whether a step waits
// for the copy call in progress (then smaller calls shorten the wait).
struct MappingSteps {
  double create = 0, map = 0, access = 0;
};
MappingSteps timeMappingSteps(Pages& pages, std::size_t rounds, CUstream stream, void* host, CUdeviceptr source,
                              std::size_t copyBytes, std::size_t chunkBytes = 0) {
  if (chunkBytes == 0) chunkBytes = copyBytes;
  CUmemAllocationProp prop = properties();
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<double> create, map, setAccess;
  for (std::size_t round = 0; round < rounds; ++round) {
    for (std::size_t done = 0; stream != nullptr && done < copyBytes; done += chunkBytes)
      check(cuMemcpyDtoHAsync(static_cast<char*>(host) + done, source + done, chunkBytes, stream), "copy");
    CUmemGenericAllocationHandle handle;
    const double t0 = now();
    check(cuMemCreate(&handle, pages.pageBytes, &prop, 0), "create (steps)");
    const double t1 = now();
    check(cuMemMap(pages.base, pages.pageBytes, 0, handle, 0), "map (steps)");
    const double t2 = now();
    check(cuMemSetAccess(pages.base, pages.pageBytes, &access, 1), "access (steps)");
    const double t3 = now();
    create.push_back(t1 - t0);
    map.push_back(t2 - t1);
    setAccess.push_back(t3 - t2);
    if (stream != nullptr) check(cuStreamSynchronize(stream), "sync");
    check(cuMemUnmap(pages.base, pages.pageBytes), "unmap (steps)");
    check(cuMemRelease(handle), "release (steps)");
  }
  return {median(create), median(map), median(setAccess)};
}

// The access step of a host block mapped under a device page, on its own,
// `rounds` times (median), idle: a block of `locationType` (HOST_NUMA, as
// mqx creates them, or HOST) created once and mapped at the same address
// each round. Whether the block's type changes the by-the-byte cost of
// cuMemSetAccess (0.74 ms for 64 MiB on the H200, vmm-costs-H200-7cdb994).
double timeHostBlockAccess(Pages& pages, std::size_t rounds, CUmemLocationType locationType) {
  CUmemAllocationProp hostProp = properties();
  hostProp.location.type = locationType;
  hostProp.location.id = 0;
  CUmemGenericAllocationHandle block;
  check(cuMemCreate(&block, pages.pageBytes, &hostProp, 0), "cuMemCreate host (access)");
  CUmemAccessDesc access{};
  access.location = properties().location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<double> samples;
  for (std::size_t round = 0; round < rounds; ++round) {
    check(cuMemMap(pages.base, pages.pageBytes, 0, block, 0), "map host (access)");
    const double t0 = now();
    check(cuMemSetAccess(pages.base, pages.pageBytes, &access, 1), "access host (access)");
    samples.push_back(now() - t0);
    check(cuMemUnmap(pages.base, pages.pageBytes), "unmap host (access)");
  }
  check(cuMemRelease(block), "release host (access)");
  return median(samples);
}

void releaseHandles(Pages& pages) {
  for (auto handle : pages.handles)
    check(cuMemRelease(handle), "cuMemRelease");
  pages.handles.clear();
}

} // namespace

int main(int argc, char** argv) {
  std::size_t pageMiB = 8;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--page-mib") == 0 && i + 1 < argc) {
      pageMiB = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: mqx-vmm-costs [--page-mib N]  (N a power of two from 2 to 512)\n");
      return 2;
    }
  }
  if (pageMiB < 2 || pageMiB > 512 || (pageMiB & (pageMiB - 1)) != 0) {
    std::fprintf(stderr, "mqx-vmm-costs: --page-mib %zu: want a power of two from 2 to 512\n", pageMiB);
    return 2;
  }
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "retain");
  check(cuCtxSetCurrent(context), "set current");
  char name[128];
  cuDeviceGetName(name, sizeof name, device);

  const std::size_t pageBytes = pageMiB << 20;
  const std::size_t count = 512 / pageMiB; // 512 MiB
  Pages pages;
  pages.pageBytes = pageBytes;
  check(cuMemAddressReserve(&pages.base, pageBytes * count, 0, 0, 0), "reserve");

  // 1. One unmap per page, then one release per page.
  mapPages(pages, count);
  double t0 = now();
  for (std::size_t i = 0; i < count; ++i)
    check(cuMemUnmap(pages.base + i * pageBytes, pageBytes), "cuMemUnmap");
  double t1 = now();
  releaseHandles(pages);
  double t2 = now();
  const double unmapEach = (t1 - t0) / count, releaseEach = (t2 - t1) / count;

  // 2. One unmap over all adjacent pages.
  mapPages(pages, count);
  t0 = now();
  check(cuMemUnmap(pages.base, pageBytes * count), "cuMemUnmap range");
  t1 = now();
  releaseHandles(pages);
  const double unmapRangePerPage = (t1 - t0) / count;

  // 3. Map costs.
  t0 = now();
  mapPages(pages, count);
  const double mapEach = (now() - t0) / count;

  // 4. Does cuMemUnmap wait for a copy running on another stream? A 1 GiB
  // pinned D2H copy (~20 ms) is queued, then one unrelated page unmapped.
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
  const std::size_t copyBytes = 1ull << 30;
  CUdeviceptr source;
  check(cuMemAlloc(&source, copyBytes), "cuMemAlloc");
  void* host;
  check(cuMemHostAlloc(&host, copyBytes, 0), "cuMemHostAlloc");
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "warm copy");
  check(cuStreamSynchronize(stream), "sync");
  t0 = now();
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "copy");
  t1 = now();
  check(cuMemUnmap(pages.base, pageBytes), "cuMemUnmap during copy");
  t2 = now();
  check(cuStreamSynchronize(stream), "sync");
  const double t3 = now();
  const double copySeconds = t3 - t0;
  const double unmapDuringCopy = t2 - t1;
  // 5. The same for cuMemRelease and for a map during a copy.
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "copy");
  t1 = now();
  check(cuMemRelease(pages.handles[0]), "release during copy");
  t2 = now();
  check(cuStreamSynchronize(stream), "sync");
  const double releaseDuringCopy = t2 - t1;
  CUmemAllocationProp prop = properties();
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "copy");
  t1 = now();
  check(cuMemCreate(&pages.handles[0], pageBytes, &prop, 0), "create during copy");
  check(cuMemMap(pages.base, pageBytes, 0, pages.handles[0], 0), "map during copy");
  check(cuMemSetAccess(pages.base, pageBytes, &access, 1), "access during copy");
  t2 = now();
  check(cuStreamSynchronize(stream), "sync");
  const double mapDuringCopy = t2 - t1;

  // 5b. Which step of a device page's mapping a copy slows: each on its
  // own, idle and during copies, medians of 9.
  check(cuMemUnmap(pages.base, pageBytes), "unmap (before the steps)");
  check(cuMemRelease(pages.handles[0]), "release (before the steps)");
  const MappingSteps idleSteps = timeMappingSteps(pages, 9, nullptr, host, source, copyBytes);
  const MappingSteps copySteps = timeMappingSteps(pages, 9, stream, host, source, copyBytes);
  const MappingSteps copy8MiBSteps = timeMappingSteps(pages, 9, stream, host, source, copyBytes, 8u << 20);
  const MappingSteps copy2MiBSteps = timeMappingSteps(pages, 9, stream, host, source, copyBytes, 2u << 20);
  check(cuMemCreate(&pages.handles[0], pageBytes, &prop, 0), "create (after the steps)");
  check(cuMemMap(pages.base, pageBytes, 0, pages.handles[0], 0), "map (after the steps)");

  // 6. Host blocks mapped under the device range, as eviction does.
  CUmemAllocationProp hostProp = properties();
  hostProp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  hostProp.location.id = 0;
  std::size_t hostGranularityMinimum = 0, hostGranularityRecommended = 0;
  check(cuMemGetAllocationGranularity(&hostGranularityMinimum, &hostProp, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "host granularity");
  check(cuMemGetAllocationGranularity(&hostGranularityRecommended, &hostProp, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "host granularity (recommended)");
  std::vector<CUmemGenericAllocationHandle> hostBlocks(count);
  for (auto& block : hostBlocks)
    check(cuMemCreate(&block, pageBytes, &hostProp, 0), "cuMemCreate host");
  check(cuMemUnmap(pages.base, pageBytes * count), "unmap all");
  releaseHandles(pages);
  const double hostNumaAccess = timeHostBlockAccess(pages, 9, CU_MEM_LOCATION_TYPE_HOST_NUMA);
  const double hostTypeAccess = timeHostBlockAccess(pages, 9, CU_MEM_LOCATION_TYPE_HOST);
  t0 = now();
  for (std::size_t i = 0; i < count; ++i) {
    check(cuMemMap(pages.base + i * pageBytes, pageBytes, 0, hostBlocks[i], 0), "map host");
    check(cuMemSetAccess(pages.base + i * pageBytes, pageBytes, &access, 1), "access host");
  }
  const double hostMapEach = (now() - t0) / count;
  check(cuMemUnmap(pages.base, pageBytes * count), "unmap host");
  t0 = now();
  for (std::size_t i = 0; i < count; ++i)
    check(cuMemMap(pages.base + i * pageBytes, pageBytes, 0, hostBlocks[i], 0), "map host");
  t1 = now();
  check(cuMemSetAccess(pages.base, pageBytes * count, &access, 1), "access host range");
  t2 = now();
  const double hostMapOnly = (t1 - t0) / count, hostAccessRange = (t2 - t1) / count;
  check(cuMemUnmap(pages.base, pageBytes * count), "unmap host");
  // During a copy: every page mapped and its access set while the copy runs.
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "copy");
  t0 = now();
  for (std::size_t i = 0; i < count; ++i) {
    check(cuMemMap(pages.base + i * pageBytes, pageBytes, 0, hostBlocks[i], 0), "map host during copy");
    check(cuMemSetAccess(pages.base + i * pageBytes, pageBytes, &access, 1), "access host during copy");
  }
  t1 = now();
  check(cuStreamSynchronize(stream), "sync");
  const double hostMapDuringCopy = (t1 - t0) / count;
  check(cuMemUnmap(pages.base, pageBytes * count), "unmap host");
  // Unmapping device pages during a copy, one after the other (eviction
  // unmaps each page as its write-back completes).
  mapPages(pages, count);
  check(cuMemcpyDtoHAsync(host, source, copyBytes, stream), "copy");
  t0 = now();
  for (std::size_t i = 0; i < count; ++i)
    check(cuMemUnmap(pages.base + i * pageBytes, pageBytes), "unmap during copy");
  t1 = now();
  check(cuStreamSynchronize(stream), "sync");
  const double unmapEachDuringCopy = (t1 - t0) / count;
  releaseHandles(pages);
  for (auto block : hostBlocks)
    check(cuMemRelease(block), "release host");

  mqx::bench::VmmCosts costs;
  costs.device = name;
  costs.pageMiB = pageBytes >> 20;
  costs.pages = count;
  costs.hostMapEach = hostMapEach;
  costs.hostMapOnly = hostMapOnly;
  costs.hostAccessRange = hostAccessRange;
  costs.hostMapDuringCopy = hostMapDuringCopy;
  costs.unmapEachDuringCopy = unmapEachDuringCopy;
  costs.mapEach = mapEach;
  costs.unmapEach = unmapEach;
  costs.releaseEach = releaseEach;
  costs.unmapRangePerPage = unmapRangePerPage;
  costs.copySeconds = copySeconds;
  costs.unmapDuringCopy = unmapDuringCopy;
  costs.releaseDuringCopy = releaseDuringCopy;
  costs.mapDuringCopy = mapDuringCopy;
  costs.createIdle = idleSteps.create;
  costs.mapCreatedIdle = idleSteps.map;
  costs.accessIdle = idleSteps.access;
  costs.createDuringCopy = copySteps.create;
  costs.mapCreatedDuringCopy = copySteps.map;
  costs.accessDuringCopy = copySteps.access;
  costs.accessDuring8MiBCopies = copy8MiBSteps.access;
  costs.accessDuring2MiBCopies = copy2MiBSteps.access;
  costs.hostGranularityMinimum = hostGranularityMinimum;
  costs.hostGranularityRecommended = hostGranularityRecommended;
  costs.hostNumaBlockAccess = hostNumaAccess;
  costs.hostTypeBlockAccess = hostTypeAccess;
  std::fputs(mqx::bench::jsonText(mqx::bench::vmmCostsJson(costs)).c_str(), stdout);
  return 0;
}
