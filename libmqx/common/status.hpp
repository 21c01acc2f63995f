// Status codes of the mqx core. The numeric values are those of the CUDA
// driver's CUresult on purpose: the interposer hands them to the application
// unchanged, and the core stays free of cuda.h.
#pragma once

#include <string_view>

namespace mqx {

// [[nodiscard]]: a dropped status is a failure nobody handled; ignore one
// only explicitly, saying why. (clang-format misreads the attribute.)
// clang-format off
enum class [[nodiscard]] Status : int {
  Success = 0,
  InvalidValue = 1,
  OutOfMemory = 2,
  NotInitialized = 3,
  Deinitialized = 4,
  NoDevice = 100,
  InvalidContext = 201,
  InvalidHandle = 400,
  NotFound = 500,
  NotReady = 600,
  IllegalAddress = 700,
  LaunchFailed = 719,
  NotPermitted = 800,
  NotSupported = 801,
  Timeout = 909,
  Unknown = 999,
};
// clang-format on

constexpr bool ok(Status status) noexcept { return status == Status::Success; }

// The first failure of steps that must all run even when one fails (a
// release cannot stop half-way: what is left would leak).
class FirstFailure {
public:
  void note(Status status) noexcept {
    if (ok(first_)) first_ = status;
  }
  [[nodiscard]] Status status() const noexcept { return first_; }

private:
  Status first_ = Status::Success;
};

constexpr std::string_view toString(Status status) noexcept {
  switch (status) {
  case Status::Success: return "success";
  case Status::InvalidValue: return "invalid value";
  case Status::OutOfMemory: return "out of memory";
  case Status::NotInitialized: return "not initialized";
  case Status::Deinitialized: return "deinitialized";
  case Status::NoDevice: return "no device";
  case Status::InvalidContext: return "invalid context";
  case Status::InvalidHandle: return "invalid handle";
  case Status::NotFound: return "not found";
  case Status::NotReady: return "not ready";
  case Status::IllegalAddress: return "illegal address";
  case Status::LaunchFailed: return "launch failed";
  case Status::NotPermitted: return "not permitted";
  case Status::NotSupported: return "not supported";
  case Status::Timeout: return "timeout";
  case Status::Unknown: return "unknown error";
  }
  return "unknown error";
}

} // namespace mqx

// Propagates a non-success status to the caller.
#define MQX_TRY(expr)                                                                                                  \
  do {                                                                                                                 \
    if (::mqx::Status mqx_try_status_ = (expr); !::mqx::ok(mqx_try_status_)) return mqx_try_status_;                   \
  } while (0)
