// What every hook needs: calling the real driver function, turning the
// core's Status into a CUresult, keeping exceptions inside libmqx, and the
// stream a call means.
#pragma once

#include <exception>
#include <new>

#include "common/log.hpp"
#include "device/cuda/cu_status.hpp"
#include "hook/runtime.hpp"

namespace mqx::hook {

using device::cuda::DriverApi;
using device::cuda::toCuResult;

// Calls the real driver function DriverApi::*member. CUDA_ERROR_NOT_FOUND
// when the driver (or that entry point of it) is missing.
template <typename Function, typename... Args> CUresult callReal(Function DriverApi::*member, Args... args) noexcept {
  const DriverApi* api = Runtime::instance().driver();
  if (api == nullptr || api->*member == nullptr) return CUDA_ERROR_NOT_FOUND;
  return (api->*member)(args...);
}

// Runs the managed path of a hook: a C entry point must not let an exception
// out, and an error must not pass silently.
template <typename Body> CUresult guarded(const char* call, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    log(LogLevel::Error, "{}: out of host memory", call);
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& error) {
    log(LogLevel::Error, "{}: {}", call, error.what());
    return CUDA_ERROR_UNKNOWN;
  } catch (...) {
    log(LogLevel::Error, "{}: unknown exception", call);
    return CUDA_ERROR_UNKNOWN;
  }
}

// The managed result, logged when it is a failure mqx produced.
inline CUresult managedResult(const char* call, Status status) noexcept {
  if (!ok(status) && status != Status::OutOfMemory) log(LogLevel::Debug, "{}: {}", call, toString(status));
  return toCuResult(status);
}

// The failure of an allocation-like call when the runtime refuses to run
// (bad configuration), or CUDA_SUCCESS when the call may pass through.
inline CUresult refusal() noexcept {
  return Runtime::instance().state() == Runtime::State::Failed ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
}

// The stream a call means. A _ptds/_ptsz entry point's NULL stream is the
// calling thread's default stream; the explicit handle keeps that meaning
// when the core passes it to the backend.
inline StreamHandle streamOf(CUstream stream, bool perThread) noexcept {
  if (perThread && stream == nullptr) stream = CU_STREAM_PER_THREAD;
  return reinterpret_cast<StreamHandle>(stream);
}

// How a copy or memset is ordered: its stream, and whether the call blocks
// (cuMemcpyHtoD) or not (cuMemcpyHtoDAsync). The blocking forms run on the
// legacy default stream, or on the calling thread's default stream for the
// _ptds entry points.
struct Order {
  StreamHandle stream;
  bool synchronous;
};
inline Order blocking(bool perThread) noexcept { return Order{streamOf(nullptr, perThread), true}; }

// Whether `stream` is capturing a graph. Work on a capturing stream is not
// executed but recorded: it passes through to the driver unchanged (mqx puts
// nothing of its own into a capture: no loads, waits or fences), and the
// graph's launch (cuGraphLaunch) later prepares every page it may reach.
inline bool capturing(StreamHandle stream) noexcept {
  if (!Runtime::instance().anyCapture()) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return callReal(&DriverApi::cuStreamIsCapturing, reinterpret_cast<CUstream>(stream), &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}
inline Order async(CUstream stream, bool perThread) noexcept { return Order{streamOf(stream, perThread), false}; }

// The device of `stream` (CUDA 12.8's cuStreamGetDevice; before it, the
// calling thread's current device), or -1.
inline int deviceOfStream(StreamHandle stream) noexcept {
  CUdevice device = -1;
  if (callReal(&DriverApi::cuStreamGetDevice, reinterpret_cast<CUstream>(stream), &device) == CUDA_SUCCESS)
    return static_cast<int>(device);
  return callReal(&DriverApi::cuCtxGetDevice, &device) == CUDA_SUCCESS ? static_cast<int>(device) : -1;
}

// Waits for the work the application put on `order`'s stream before the
// call: what a call that cannot be enqueued on that stream (another device's
// manager does it, or two managers do) must be ordered after.
inline CUresult waitForStream(Order order) noexcept {
  return callReal(&DriverApi::cuStreamSynchronize, reinterpret_cast<CUstream>(order.stream));
}

// How `manager` may carry out a call ordered by `order`. A manager does its
// stream work only on streams of its own device: its fences are events,
// which the driver records only on streams of their device. A call whose
// stream belongs to another device (a copy from device 1's memory issued on
// a device-0 stream, which the driver allows) is ordered by waiting for
// that stream first, then runs to completion on the manager's own default
// stream. One process, one device: nothing to ask.
inline Order orderFor(const MemoryManager& manager, Order order) noexcept {
  const Runtime& runtime = Runtime::instance();
  if (runtime.managers().count() < 2 || runtime.managers().ordinalOf(&manager) == deviceOfStream(order.stream))
    return order;
  // A failed wait (an error of the application's earlier work) comes back
  // from the manager's own calls, which see the same context error.
  waitForStream(order);
  return Order{StreamHandle{}, true};
}

} // namespace mqx::hook
