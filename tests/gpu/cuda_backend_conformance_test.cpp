// The DeviceBackend conformance suite (tests/unit/device/backend_conformance.hpp)
// on the GPU: CudaBackend in the primary context of device 0, without
// libmqx. Exits 77 (skipped) where there is no driver or no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "backend_conformance.hpp"
#include "common/status.hpp"
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
