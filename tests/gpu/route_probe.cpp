// Checks that every symbol-resolution route hands out libmqx's hooks: dlsym
// of libcuda.so.1 and cuGetProcAddress(_v2) for versions and per-thread flags
// (the direct binding route is what driver_api_tests uses). Run natively it
// only reports whether the driver's cuGetProcAddress returns exported
// addresses (mqx then identifies them exactly) and exits 0.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "gpu_check.hpp"

namespace {

struct Expectation {
  const char* symbol;
  int version;
  cuuint64_t flags;
  const char* exported; // the exported name whose hook must come back
};

constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

const Expectation kExpectations[] = {
    {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
    {"cuMemAlloc", 12000, kPerThread, "cuMemAlloc_v2"},
    {"cuMemFree", 13000, 0, "cuMemFree_v2"},
    {"cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 13000, kPerThread, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyAsync", 13000, kPerThread, "cuMemcpyAsync_ptsz"},
    {"cuMemsetD8Async", 13000, kPerThread, "cuMemsetD8Async_ptsz"},
    {"cuMemsetD32", 12000, 0, "cuMemsetD32_v2"},
    {"cuLaunchKernel", 13000, 0, "cuLaunchKernel"},
    {"cuLaunchKernel", 13000, kPerThread, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 12000, 0, "cuLaunchKernelEx"},
    {"cuStreamSynchronize", 13000, kPerThread, "cuStreamSynchronize_ptsz"},
    {"cuMemGetInfo", 13000, 0, "cuMemGetInfo_v2"},
    {"cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2"},
};

} // namespace

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  GPU_CHECK(driver != nullptr);
  auto init = reinterpret_cast<PFN_cuInit_v2000>(dlsym(driver, "cuInit"));
  GPU_CHECK(init != nullptr);
  if (init(0) != CUDA_SUCCESS) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  auto getProcAddress = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver, "cuGetProcAddress_v2"));
  GPU_CHECK(getProcAddress != nullptr);

  if (!gpu_test::mqxPreloaded()) {
    void* function = nullptr;
    CUdriverProcAddressQueryResult status{};
    GPU_CHECK(getProcAddress("cuMemAlloc", &function, 13000, 0, &status) == CUDA_SUCCESS);
    std::printf("native: cuGetProcAddress(\"cuMemAlloc\") %s dlsym(libcuda, \"cuMemAlloc_v2\")\n",
                function == dlsym(driver, "cuMemAlloc_v2") ? "==" : "!=");
    return 0;
  }

  int failures = 0;
  // dlsym of the driver library: hooked names give the hook, others the driver.
  for (const char* name : {"cuMemAlloc_v2", "cuLaunchKernel", "cuMemcpyDtoH_v2_ptds", "cuGetProcAddress_v2"}) {
    if (dlsym(driver, name) != dlsym(RTLD_DEFAULT, name)) {
      std::printf("dlsym(libcuda, %s) is not the hook\n", name);
      ++failures;
    }
  }
  Dl_info info{};
  void* unhooked = dlsym(driver, "cuDeviceGetName");
  if (unhooked == nullptr || dladdr(unhooked, &info) == 0 || std::strstr(info.dli_fname, "libcuda") == nullptr) {
    std::printf("dlsym(libcuda, cuDeviceGetName) is not the driver's\n");
    ++failures;
  }
  for (const Expectation& expected : kExpectations) {
    void* function = nullptr;
    CUdriverProcAddressQueryResult status{};
    CUresult result = getProcAddress(expected.symbol, &function, expected.version, expected.flags, &status);
    void* hook = dlsym(RTLD_DEFAULT, expected.exported);
    if (result != CUDA_SUCCESS || function != hook || hook == nullptr) {
      std::printf("cuGetProcAddress_v2(%s, %d, %llu) -> %p, hook %s at %p\n", expected.symbol, expected.version,
                  static_cast<unsigned long long>(expected.flags), function, expected.exported, hook);
      ++failures;
    }
  }
  // The version-1 entry point (CUDA 11.3 to 11.8 programs).
  auto getProcAddressV1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(driver, "cuGetProcAddress"));
  void* function = nullptr;
  if (getProcAddressV1 == nullptr || getProcAddressV1("cuMemFree", &function, 11080, 0) != CUDA_SUCCESS ||
      function != dlsym(RTLD_DEFAULT, "cuMemFree_v2")) {
    std::printf("cuGetProcAddress (v1) does not hand out the cuMemFree_v2 hook\n");
    ++failures;
  }
  std::printf("route probe: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
