// The DeviceBackend conformance suite (tests/unit/device/backend_conformance.hpp)
// on the GPU: CudaBackend in the primary context of device 0, without
// libmqx. Exits 77 (skipped) where there is no driver or no GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend_conformance.hpp"
#include "common/status.hpp"
#include "device/cuda/contextless_host_blocks.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/driver_api.hpp"

namespace mqx::device::conformance {
namespace {

using cuda::CudaBackend;
using cuda::DriverApi;

DriverApi driverApi; // outlives every backend

// Opens the driver and makes device 0's primary context current; false,
// with the reason, where that cannot be done.
bool openDevice(std::string* why) {
  if (!DriverApi::load(driverApi, *why)) return false;
  if (const CUresult result = driverApi.cuInit(0); result != CUDA_SUCCESS) {
    *why = driverApi.describe("cuInit", result);
    return false;
  }
  int count = 0;
  if (driverApi.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
    *why = "the driver lists no device";
    return false;
  }
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  using SetCurrent = CUresult (*)(CUcontext);
  const auto retain = reinterpret_cast<Retain>(driverApi.symbol("cuDevicePrimaryCtxRetain"));
  const auto setCurrent = reinterpret_cast<SetCurrent>(driverApi.symbol("cuCtxSetCurrent"));
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (retain == nullptr || setCurrent == nullptr || driverApi.cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      retain(&context, device) != CUDA_SUCCESS || setCurrent(context) != CUDA_SUCCESS) {
    *why = "device 0's primary context cannot be made current";
    return false;
  }
  return true;
}

BackendMaker cudaMaker() {
  return {"Cuda", [](std::string* why) -> std::unique_ptr<DeviceBackend> {
            std::unique_ptr<CudaBackend> backend;
            if (const Status status = CudaBackend::create(driverApi, cuda::CudaBackendOptions{}, &backend);
                !ok(status)) {
              *why = std::string("the CUDA backend cannot start: ") + std::string(toString(status));
              return nullptr;
            }
            return backend;
          }};
}

INSTANTIATE_TEST_SUITE_P(Cuda, BackendConformance, ::testing::Values(cudaMaker()), backendName);

// mqxd's pool makes its blocks with no CUDA context (ContextlessHostBlocks):
// made, written, exported and at the end destroyed on a thread with no
// context current, they are the same memory for a CudaBackend that imports
// them, for its CPU view and for the device under a range.
TEST(ContextlessHostBlocks, AreTheSameMemoryForABackendThatImportsThem) {
  std::unique_ptr<CudaBackend> backend;
  ASSERT_EQ(CudaBackend::create(driverApi, cuda::CudaBackendOptions{}, &backend), Status::Success);
  std::unique_ptr<cuda::ContextlessHostBlocks> maker;
  std::vector<HostBlock> blocks;
  std::vector<LentHostBlock> lent(2);
  std::vector<unsigned char> data(backend->granularity());
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(i * 131 + 7);
  std::string why;
  Status made = Status::Unknown;
  CUcontext seen = reinterpret_cast<CUcontext>(1);
  std::thread([&] {
    driverApi.cuCtxGetCurrent(&seen);
    made = cuda::ContextlessHostBlocks::open(driverApi, 0, &maker, &why);
    if (ok(made)) made = maker->createLendableHostBlocks(backend->granularity(), 2, &blocks);
    if (ok(made)) std::memcpy(blocks[1].host, data.data(), data.size());
    for (std::size_t k = 0; k < blocks.size() && ok(made); ++k)
      made = maker->exportHostBlock(blocks[k], &lent[k]);
  }).join();
  EXPECT_EQ(seen, nullptr) << "the maker's thread has no context";
  if (made == Status::NotSupported) GTEST_SKIP() << "no lendable host memory here: " << why;
  ASSERT_EQ(made, Status::Success) << why;
  std::vector<HostBlock> imported;
  ASSERT_EQ(backend->importHostBlocks(lent, &imported), Status::Success);
  for (const LentHostBlock& block : lent)
    ::close(block.descriptor);
  EXPECT_EQ(std::memcmp(imported[1].host, data.data(), data.size()), 0) << "the maker's write is seen";
  DevicePtr range = 0;
  ASSERT_EQ(backend->reserve(backend->granularity(), &range), Status::Success);
  ASSERT_EQ(backend->mapHost(range, imported[1]), Status::Success);
  std::vector<unsigned char> read(data.size());
  ASSERT_EQ(driverApi.cuMemcpyDtoH_v2(read.data(), range, read.size()), CUDA_SUCCESS);
  EXPECT_EQ(read, data) << "the device reads the block under a range";
  ASSERT_EQ(driverApi.cuMemsetD8_v2(range, 0x3c, 4096), CUDA_SUCCESS);
  ASSERT_EQ(driverApi.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(blocks[1].host[100], std::byte{0x3c}) << "the device's write is seen through the maker's view";
  EXPECT_EQ(backend->unmap(range, backend->granularity()), Status::Success);
  EXPECT_EQ(backend->release(range, backend->granularity()), Status::Success);
  std::thread([&] { maker->destroyHostBlocks(blocks); }).join();
  EXPECT_EQ(imported[1].host[4096], static_cast<std::byte>(data[4096])) << "the import keeps the memory";
  backend->destroyHostBlocks(imported);
}

} // namespace
} // namespace mqx::device::conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  if (!mqx::device::conformance::openDevice(&why)) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
