// mqx-host-backing-probe: the driver behaviour behind "every page always
// mapped" (docs/architecture.md, pages): host-located physical memory
// (cuMemCreate with CU_MEM_LOCATION_TYPE_HOST_NUMA) mapped under a device
// virtual range, read and written by kernels there, reachable by the CPU
// through a second mapping of the same handle, and a page remapped between
// device and host memory with its bytes copied across. Prints one JSON
// object; exits non-zero when a step the design needs fails.
// Build: nvcc -O2 -arch=sm_90 -std=c++17 host_backing_probe.cu -lcuda (nlohmann/json
// from nlohmann-json3-dev, or -I.carry/include on a host without it)
#include <cuda.h>
#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

nlohmann::ordered_json results = nlohmann::ordered_json::object();
int failures = 0;

// A number, true or false, or the name of a driver error.
void record(const char* key, nlohmann::ordered_json value) { results[key] = std::move(value); }

bool step(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
  record(what, name ? name : "?");
  ++failures;
  return false;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

__global__ void sumWords(const unsigned* words, std::size_t count, unsigned long long* sum) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    local += words[i];
  atomicAdd(sum, local);
}

__global__ void writeWords(unsigned* words, std::size_t count, unsigned value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    words[i] = value + static_cast<unsigned>(i);
}

unsigned long long deviceSum(CUdeviceptr words, std::size_t count) {
  unsigned long long* sum = nullptr;
  cudaMallocManaged(&sum, sizeof *sum);
  *sum = 0;
  sumWords<<<264, 256>>>(reinterpret_cast<const unsigned*>(words), count, sum);
  cudaError_t error = cudaDeviceSynchronize();
  unsigned long long value = error == cudaSuccess ? *sum : ~0ull;
  if (error != cudaSuccess) std::fprintf(stderr, "kernel: %s\n", cudaGetErrorString(error));
  cudaFree(sum);
  return value;
}

} // namespace

int main() {
  cudaFree(nullptr); // primary context
  CUdevice device = 0;
  cuCtxGetDevice(&device);
  const std::size_t page = 8u << 20;
  const std::size_t words = page / 4;

  CUmemAllocationProp host{};
  host.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  host.location.id = 0;
  std::size_t granularity = 0;
  step(cuMemGetAllocationGranularity(&granularity, &host, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "host granularity");
  record("host_granularity", granularity);

  // Creating host-located memory pins it: what one page costs.
  std::vector<CUmemGenericAllocationHandle> blocks(16);
  double start = now();
  for (auto& block : blocks)
    if (!step(cuMemCreate(&block, page, &host, 0), "cuMemCreate host")) return 1;
  record("create_host_ms_per_8MiB", (now() - start) * 1e3 / blocks.size());

  // The CPU's view: the block mapped with access for the device and the host.
  CUdeviceptr view = 0, pageRange = 0;
  step(cuMemAddressReserve(&view, page, 0, 0, 0), "reserve view");
  step(cuMemAddressReserve(&pageRange, page, 0, 0, 0), "reserve page");
  step(cuMemMap(view, page, 0, blocks[0], 0), "map view");
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = device;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  access[1].location.id = 0;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  bool hostAccess = step(cuMemSetAccess(view, page, access, 2), "set access device+host_numa");
  if (!hostAccess) {
    access[1].location.type = CU_MEM_LOCATION_TYPE_HOST;
    hostAccess = step(cuMemSetAccess(view, page, access, 2), "set access device+host");
  }
  if (!hostAccess) step(cuMemSetAccess(view, page, access, 1), "set access device only");
  record("cpu_access_through_view", hostAccess);

  // Second mapping of the same block: the page's own range.
  step(cuMemMap(pageRange, page, 0, blocks[0], 0), "map page to host block");
  step(cuMemSetAccess(pageRange, page, access, 1), "set access page");
  auto* cpu = reinterpret_cast<unsigned*>(view);
  unsigned long long expected = 0;
  if (hostAccess) {
    for (std::size_t i = 0; i < words; ++i) {
      cpu[i] = static_cast<unsigned>(i * 7);
      expected += static_cast<unsigned>(i * 7);
    }
    record("kernel_reads_cpu_bytes_through_page", deviceSum(pageRange, words) == expected);
    writeWords<<<264, 256>>>(reinterpret_cast<unsigned*>(pageRange), words, 5);
    cudaDeviceSynchronize();
    bool seen = true;
    for (std::size_t i = 0; i < words; ++i)
      seen = seen && cpu[i] == 5 + static_cast<unsigned>(i);
    record("cpu_sees_kernel_writes_through_view", seen);
  }

  // Pointer attributes and a driver copy into the host-mapped page.
  CUmemorytype type{};
  CUresult attribute = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pageRange);
  record("pointer_attribute_result", attribute);
  record("pointer_memory_type", type);
  std::vector<unsigned> hostWords(words, 3);
  record("htod_into_host_mapped_page",
         step(cuMemcpyHtoD(pageRange, hostWords.data(), page), "cuMemcpyHtoD host-mapped"));

  // A graph memcpy node whose destination is the host-mapped page.
  {
    CUgraph graph = nullptr;
    cuGraphCreate(&graph, 0);
    CUDA_MEMCPY3D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = hostWords.data();
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = pageRange;
    copy.WidthInBytes = page;
    copy.Height = 1;
    copy.Depth = 1;
    CUgraphNode node = nullptr;
    CUcontext context = nullptr;
    cuCtxGetCurrent(&context);
    record("graph_memcpy_node_host_mapped",
           step(cuGraphAddMemcpyNode(&node, graph, nullptr, 0, &copy, context), "graph memcpy node"));
    cuGraphDestroy(graph);
  }

  // Remap host -> device: unmap, map device memory, copy from the view.
  CUmemAllocationProp onDevice{};
  onDevice.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  onDevice.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  onDevice.location.id = device;
  CUmemGenericAllocationHandle deviceBlock = 0;
  CUstream stream = nullptr;
  cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  for (std::size_t i = 0; i < words; ++i)
    hostWords[i] = static_cast<unsigned>(i ^ 0x55);
  expected = 0;
  for (unsigned value : hostWords)
    expected += value;
  cuMemcpyHtoD(pageRange, hostWords.data(), page);
  start = now();
  bool remapped = step(cuMemUnmap(pageRange, page), "unmap host") &&
                  step(cuMemCreate(&deviceBlock, page, &onDevice, 0), "create device") &&
                  step(cuMemMap(pageRange, page, 0, deviceBlock, 0), "map device") &&
                  step(cuMemSetAccess(pageRange, page, access, 1), "access device") &&
                  step(cuMemcpyAsync(pageRange, view, page, stream), "copy view to device") &&
                  step(cuStreamSynchronize(stream), "sync load");
  record("remap_to_device_ms", (now() - start) * 1e3);
  record("load_keeps_bytes", remapped && deviceSum(pageRange, words) == expected);

  // Remap device -> host: write back into the block, unmap, map the block.
  writeWords<<<264, 256>>>(reinterpret_cast<unsigned*>(pageRange), words, 11);
  cudaDeviceSynchronize();
  expected = 0;
  for (std::size_t i = 0; i < words; ++i)
    expected += 11 + static_cast<unsigned>(i);
  start = now();
  remapped = step(cuMemcpyAsync(view, pageRange, page, stream), "copy device to view") &&
             step(cuStreamSynchronize(stream), "sync write-back") &&
             step(cuMemUnmap(pageRange, page), "unmap device") && step(cuMemRelease(deviceBlock), "release device") &&
             step(cuMemMap(pageRange, page, 0, blocks[0], 0), "map host again") &&
             step(cuMemSetAccess(pageRange, page, access, 1), "access host again");
  record("remap_to_host_ms", (now() - start) * 1e3);
  record("evict_keeps_bytes", remapped && deviceSum(pageRange, words) == expected);

  // Bandwidth: device memory -> host block through the view vs pinned D2H.
  const std::size_t big = 256u << 20;
  CUdeviceptr source = 0, hostBig = 0;
  cuMemAlloc(&source, big);
  CUmemGenericAllocationHandle bigBlock = 0;
  if (step(cuMemCreate(&bigBlock, big, &host, 0), "create 256MiB host") &&
      step(cuMemAddressReserve(&hostBig, big, 0, 0, 0), "reserve 256MiB") &&
      step(cuMemMap(hostBig, big, 0, bigBlock, 0), "map 256MiB") &&
      step(cuMemSetAccess(hostBig, big, access, hostAccess ? 2 : 1), "access 256MiB")) {
    cuMemcpyAsync(hostBig, source, big, stream);
    cuStreamSynchronize(stream);
    start = now();
    for (int i = 0; i < 4; ++i)
      cuMemcpyAsync(hostBig, source, big, stream);
    cuStreamSynchronize(stream);
    record("device_to_host_block_GBps", 4.0 * big / (now() - start) / 1e9);
    start = now();
    for (int i = 0; i < 4; ++i)
      cuMemcpyAsync(source, hostBig, big, stream);
    cuStreamSynchronize(stream);
    record("host_block_to_device_GBps", 4.0 * big / (now() - start) / 1e9);
  }
  void* pinned = nullptr;
  cuMemAllocHost(&pinned, big);
  start = now();
  for (int i = 0; i < 4; ++i)
    cuMemcpyDtoHAsync(pinned, source, big, stream);
  cuStreamSynchronize(stream);
  record("device_to_pinned_GBps", 4.0 * big / (now() - start) / 1e9);

  std::printf("%s\n", results.dump(2).c_str());
  return failures == 0 ? 0 : 1;
}
