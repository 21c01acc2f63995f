// DeviceAttributes from the CUDA runtime's cudaDeviceProp, for cudart
// programs (the occupancy GPU test, the kernel-mix benchmark). The
// interposer, which has no cudart, reads the same attributes with
// cuDeviceGetAttribute (libmqx/device/cuda/cuda_launch_tuning.cpp).
#pragma once

#include <cuda_runtime.h>

#include "kernelopt/device_attributes.hpp"

namespace mqx::kernelopt {

DeviceAttributes deviceAttributesOf(const cudaDeviceProp &properties);

} // namespace mqx::kernelopt
