// libmqx's symbol-resolution routes and pass-through, checked on the CPU: the
// program is linked against a fake libcuda.so.1 (fake_cuda.c) and runs with
// libmqx preloaded. The GPU counterpart is tests/gpu/route_probe.cpp.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mqx/advice.h"

extern "C" int fake_calls(const char* name);
extern "C" void* fake_self(const char* name);

namespace {

void* driver() {
  static void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return handle;
}

// libmqx's export of `name` (the preloaded library comes first in the
// global scope).
void* hookOf(const char* name) { return dlsym(RTLD_DEFAULT, name); }

std::string fileOf(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

class InterposerRoutes : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(driver(), nullptr) << "the fake libcuda.so.1 is not loaded";
    ASSERT_NE(fileOf(hookOf("cuMemAlloc_v2")).find("libmqx"), std::string::npos) << "run with LD_PRELOAD=libmqx.so";
    unsetenv("FAKE_CUDA_HIDDEN_POINTERS");
  }
};

TEST_F(InterposerRoutes, DlsymOfTheDriverGivesTheHooks) {
  for (const char* name : {"cuMemAlloc_v2", "cuMemcpyHtoD_v2_ptds", "cuLaunchKernel", "cuGetProcAddress_v2"}) {
    void* found = dlsym(driver(), name);
    EXPECT_EQ(found, hookOf(name)) << name;
    EXPECT_NE(found, fake_self(name)) << name;
  }
}

TEST_F(InterposerRoutes, DlsymOfOtherNamesGivesTheDriver) {
  EXPECT_EQ(dlsym(driver(), "cuDeviceGetName"), fake_self("cuDeviceGetName"));
  EXPECT_EQ(dlsym(driver(), "fake_calls"), reinterpret_cast<void*>(&fake_calls));
  EXPECT_EQ(dlsym(driver(), "cuNoSuchFunction"), nullptr);
}

TEST_F(InterposerRoutes, RtldNextIsRelativeToTheRealCaller) {
  // libmqx defines no malloc: the C library's comes next for this program.
  EXPECT_EQ(dlsym(RTLD_NEXT, "malloc"), dlvsym(RTLD_NEXT, "malloc", "GLIBC_2.2.5"));
  // libmqx is preloaded right after the program, so its hook is next.
  EXPECT_EQ(dlsym(RTLD_NEXT, "cuMemAlloc_v2"), hookOf("cuMemAlloc_v2"));
}

void expectProcAddress(const char* symbol, int version, cuuint64_t flags, const char* expected) {
  auto getProcAddress = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver(), "cuGetProcAddress_v2"));
  ASSERT_NE(getProcAddress, nullptr);
  void* function = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(getProcAddress(symbol, &function, version, flags, &status), CUDA_SUCCESS) << symbol;
  EXPECT_EQ(function, expected[0] == '=' ? fake_self(expected + 1) : hookOf(expected))
      << symbol << " " << version << " " << flags;
}

void expectAllProcAddresses() {
  constexpr cuuint64_t perThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  expectProcAddress("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
  expectProcAddress("cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2");
  expectProcAddress("cuMemcpyHtoD", 13000, perThread, "cuMemcpyHtoD_v2_ptds");
  expectProcAddress("cuMemsetD8Async", 12000, perThread, "cuMemsetD8Async_ptsz");
  expectProcAddress("cuCtxSynchronize", 12080, 0, "cuCtxSynchronize");
  expectProcAddress("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
  expectProcAddress("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
  expectProcAddress("cuDeviceGetName", 13000, 0, "=cuDeviceGetName");
}

TEST_F(InterposerRoutes, GetProcAddressGivesTheHookOfTheChosenAbi) { expectAllProcAddresses(); }

TEST_F(InterposerRoutes, GetProcAddressFallsBackToVersionRules) {
  // The driver hands out unexported addresses: libmqx cannot name them and
  // picks the hook by version and flags.
  setenv("FAKE_CUDA_HIDDEN_POINTERS", "1", 1);
  constexpr cuuint64_t perThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  expectProcAddress("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
  expectProcAddress("cuMemcpyHtoD", 13000, perThread, "cuMemcpyHtoD_v2_ptds");
  expectProcAddress("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
  // Not hooked: the driver's pointer, whatever it is.
  auto getProcAddress = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver(), "cuGetProcAddress_v2"));
  void* function = nullptr;
  ASSERT_EQ(getProcAddress("cuDeviceGetName", &function, 13000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_NE(function, nullptr);
  EXPECT_NE(fileOf(function).find("libcuda"), std::string::npos);
}

TEST_F(InterposerRoutes, VersionOneGetProcAddressIsHookedToo) {
  auto getProcAddress = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(driver(), "cuGetProcAddress"));
  ASSERT_EQ(reinterpret_cast<void*>(getProcAddress), hookOf("cuGetProcAddress"));
  void* function = nullptr;
  ASSERT_EQ(getProcAddress("cuMemAlloc", &function, 11080, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, hookOf("cuMemAlloc_v2"));
}

TEST_F(InterposerRoutes, WithoutADeviceEverythingPassesThrough) {
  setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
  // Direct binding: these calls bind to libmqx's exports.
  EXPECT_NE(fileOf(reinterpret_cast<void*>(&cuInit)).find("libmqx"), std::string::npos);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  int before = fake_calls("cuMemAlloc_v2");
  CUdeviceptr pointer = 0;
  EXPECT_EQ(cuMemAlloc(&pointer, 64), CUDA_SUCCESS);
  EXPECT_EQ(pointer, 0x1000U);
  EXPECT_EQ(fake_calls("cuMemAlloc_v2"), before + 1);
  int copies = fake_calls("cuMemcpyDtoH_v2");
  char host[16];
  EXPECT_EQ(cuMemcpyDtoH(host, pointer, sizeof(host)), CUDA_SUCCESS);
  EXPECT_EQ(fake_calls("cuMemcpyDtoH_v2"), copies + 1);
  int launches = fake_calls("cuLaunchKernel");
  EXPECT_EQ(cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake_calls("cuLaunchKernel"), launches + 1);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  // Nothing is managed: advice is a no-op, bad flags are still refused.
  using Active = int (*)();
  auto active = reinterpret_cast<Active>(hookOf("mqx_active"));
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active(), 0);
  EXPECT_EQ(cudaAdvice(reinterpret_cast<void*>(pointer), MQX_ADVICE_INPUT), 0);
  EXPECT_EQ(cudaAdvice(reinterpret_cast<void*>(pointer), 9), 1);
  unsetenv("FAKE_CUDA_NO_DEVICE");
}

} // namespace
