// CUresult <-> mqx::Status. The numeric values are the same by design
// (common/status.hpp), so a driver error reaches the application unchanged,
// including codes the Status enum does not name.
#pragma once

#include "common/status.hpp"
#include "device/cuda/cuda_headers.hpp"

namespace mqx::device::cuda {

constexpr Status toStatus(CUresult result) noexcept { return static_cast<Status>(static_cast<int>(result)); }
constexpr CUresult toCuResult(Status status) noexcept { return static_cast<CUresult>(static_cast<int>(status)); }

static_assert(static_cast<int>(Status::OutOfMemory) == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(static_cast<int>(Status::InvalidValue) == CUDA_ERROR_INVALID_VALUE);
static_assert(static_cast<int>(Status::NotSupported) == CUDA_ERROR_NOT_SUPPORTED);
static_assert(static_cast<int>(Status::NotReady) == CUDA_ERROR_NOT_READY);
static_assert(static_cast<int>(Status::IllegalAddress) == CUDA_ERROR_ILLEGAL_ADDRESS);

} // namespace mqx::device::cuda
