// Launch family. A launch in a managed process goes to the core, which finds
// the regions it references (advice, or a scan of the parameter bytes), makes
// them resident and then has the backend replay this very call (NativeLaunch).
// Parameters passed packed through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER)
// are presented to the core as kernelParams pointing into that buffer.
// Kernels declared resizable are launched with the launch service's grid
// and block size (CudaLaunchTuning).
#include <functional>
#include <vector>

#include "device/cuda/native_launch.hpp"
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;
using device::KernelLaunch;
using device::ParamInfo;
using device::cuda::CudaLaunchTuning;
using device::cuda::NativeLaunch;

namespace {

// One pointer per parameter into the packed buffer of `extra`; empty when
// the layout or the buffer is unknown (the core then treats the launch as
// referencing nothing it can see: advice or the "all" fallback still work).
std::vector<void*> unpackExtra(CUfunction function, void** extra) {
  std::vector<void*> params;
  char* buffer = nullptr;
  std::size_t bufferBytes = 0;
  // Key/value pairs up to CU_LAUNCH_PARAM_END; the driver knows two keys.
  for (int pair = 0; pair < 8 && extra[2 * pair] != CU_LAUNCH_PARAM_END; ++pair) {
    void* key = extra[2 * pair];
    void* value = extra[2 * pair + 1];
    if (key == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = static_cast<char*>(value);
    } else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE && value != nullptr) {
      bufferBytes = *static_cast<std::size_t*>(value);
    }
  }
  auto* backend = Runtime::instance().current().backend;
  std::vector<ParamInfo> layout;
  if (buffer == nullptr || backend == nullptr ||
      !ok(backend->paramLayout(reinterpret_cast<FunctionHandle>(function), &layout))) {
    return params;
  }
  for (const ParamInfo& info : layout) {
    if (info.offset + info.size > bufferBytes) break;
    params.push_back(buffer + info.offset);
  }
  return params;
}

struct Geometry {
  unsigned grid[3];
  unsigned block[3];
  unsigned sharedBytes;
  StreamHandle stream;
};

template <typename PassThrough>
CUresult launch(const char* call, const NativeLaunch& native, const Geometry& geometry, PassThrough passThrough) {
  // The launch runs on the current context's device: that device's manager
  // makes its references resident (a device mqx does not manage runs it
  // unchanged).
  const Runtime::ManagedDevice device = Runtime::instance().current();
  MemoryManager* manager = device.manager;
  if (manager == nullptr || capturing(geometry.stream)) return passThrough();
  return guarded(call, [&] {
    KernelLaunch request;
    request.function = reinterpret_cast<FunctionHandle>(native.function);
    for (int i = 0; i < 3; ++i) {
      request.grid[i] = geometry.grid[i];
      request.block[i] = geometry.block[i];
    }
    request.sharedBytes = geometry.sharedBytes;
    request.stream = geometry.stream;
    request.params = native.kernelParams;
    request.native = &native;
    std::vector<void*> unpacked;
    if (native.kernelParams == nullptr && native.extra != nullptr) {
      unpacked = unpackExtra(native.function, native.extra);
      request.params = unpacked.empty() ? nullptr : unpacked.data();
    }
    // A resizable kernel gets the launch service's grid and block
    // (docs/kernelopt.md). A cooperative launch keeps its own (its grid must
    // stay co-resident as the application sized it), and so does one with
    // launch attributes (a cluster shape must divide the grid).
    CudaLaunchTuning* tuning = device.tuning;
    std::uint64_t ticket = 0;
    const bool plain = native.kind == NativeLaunch::Kind::Kernel ||
                       (native.kind == NativeLaunch::Kind::KernelEx && native.config->numAttrs == 0);
    if (tuning != nullptr && plain) ticket = tuning->prepare(request, native.function);
    const Status status = manager->launch(request);
    if (ticket != 0) tuning->launched(ticket, reinterpret_cast<CUstream>(request.stream), ok(status));
    return managedResult(call, status);
  });
}

template <typename PassThrough>
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned shared, CUstream stream, void** params, void** extra, bool perThread,
                      PassThrough passThrough) {
  NativeLaunch native{NativeLaunch::Kind::Kernel, f, params, extra, nullptr};
  Geometry geometry{{gx, gy, gz}, {bx, by, bz}, shared, streamOf(stream, perThread)};
  return launch("cuLaunchKernel", native, geometry, passThrough);
}

template <typename PassThrough>
CUresult launchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra, bool perThread,
                        PassThrough passThrough) {
  if (config == nullptr) return passThrough();
  NativeLaunch native{NativeLaunch::Kind::KernelEx, f, params, extra, config};
  Geometry geometry{{config->gridDimX, config->gridDimY, config->gridDimZ},
                    {config->blockDimX, config->blockDimY, config->blockDimZ},
                    config->sharedMemBytes,
                    streamOf(config->hStream, perThread)};
  return launch("cuLaunchKernelEx", native, geometry, passThrough);
}

template <typename PassThrough>
CUresult launchCooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared, CUstream stream, void** params, bool perThread, PassThrough passThrough) {
  NativeLaunch native{NativeLaunch::Kind::Cooperative, f, params, nullptr, nullptr};
  Geometry geometry{{gx, gy, gz}, {bx, by, bz}, shared, streamOf(stream, perThread)};
  return launch("cuLaunchCooperativeKernel", native, geometry, passThrough);
}

} // namespace

MQX_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, CUstream s, void** params, void** extra) {
  return launchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, false, [&] {
    return callReal(&DriverApi::cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
  });
}

MQX_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned shared, CUstream s, void** params, void** extra) {
  return launchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, true, [&] {
    return callReal(&DriverApi::cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
  });
}

MQX_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  return launchKernelEx(config, f, params, extra, false,
                        [&] { return callReal(&DriverApi::cuLaunchKernelEx, config, f, params, extra); });
}

MQX_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  return launchKernelEx(config, f, params, extra, true,
                        [&] { return callReal(&DriverApi::cuLaunchKernelEx_ptsz, config, f, params, extra); });
}

MQX_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                              unsigned by, unsigned bz, unsigned shared, CUstream s, void** params) {
  return launchCooperative(f, gx, gy, gz, bx, by, bz, shared, s, params, false, [&] {
    return callReal(&DriverApi::cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shared, s, params);
  });
}

MQX_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                   unsigned by, unsigned bz, unsigned shared, CUstream s,
                                                   void** params) {
  return launchCooperative(f, gx, gy, gz, bx, by, bz, shared, s, params, true, [&] {
    return callReal(&DriverApi::cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, s, params);
  });
}

// Graph launches: the graph's nodes may touch any page of the process
// (kernels, copies and memsets recorded by stream capture or added by hand),
// so the core prepares every page and keeps each where it is until the
// graph completes (docs/interposer.md, "graphs").
namespace {
template <typename PassThrough> CUresult graphLaunch(CUstream stream, bool perThread, PassThrough passThrough) {
  MemoryManager* manager = Runtime::instance().current().manager;
  const StreamHandle handle = streamOf(stream, perThread);
  if (manager == nullptr || capturing(handle)) return passThrough();
  return guarded("cuGraphLaunch", [&] {
    const std::function<Status()> submit = [&] { return device::cuda::toStatus(passThrough()); };
    return managedResult("cuGraphLaunch", manager->launchUnknown(handle, submit));
  });
}
} // namespace

MQX_EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream s) {
  return graphLaunch(s, false, [&] { return callReal(&DriverApi::cuGraphLaunch, graph, s); });
}

MQX_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream s) {
  return graphLaunch(s, true, [&] { return callReal(&DriverApi::cuGraphLaunch_ptsz, graph, s); });
}
