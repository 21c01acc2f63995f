#include "hook/proc_address_rules.hpp"

#include <array>

namespace mqx::hook {
namespace {

struct Rule {
  std::string_view symbol;
  int since;                  // first CUDA version with this ABI
  std::string_view legacy;    // exported name, legacy default stream
  std::string_view perThread; // exported name, per-thread default stream (empty: same)
};

// Per-thread default stream variants exist from CUDA 7.0 on.
constexpr int kPerThreadSince = 7000;

constexpr std::array kRules{
    // Memory.
    Rule{"cuMemAlloc", 3020, "cuMemAlloc_v2", ""},
    Rule{"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", ""},
    Rule{"cuMemFree", 3020, "cuMemFree_v2", ""},
    Rule{"cuMemAllocAsync", 11020, "cuMemAllocAsync", "cuMemAllocAsync_ptsz"},
    Rule{"cuMemFreeAsync", 11020, "cuMemFreeAsync", "cuMemFreeAsync_ptsz"},
    Rule{"cuMemPoolCreate", 11020, "cuMemPoolCreate", ""},
    Rule{"cuMemPoolDestroy", 11020, "cuMemPoolDestroy", ""},
    Rule{"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"},
    Rule{"cuIpcGetMemHandle", 4010, "cuIpcGetMemHandle", ""},
    Rule{"cuIpcOpenMemHandle", 11000, "cuIpcOpenMemHandle_v2", ""},
    Rule{"cuIpcCloseMemHandle", 4010, "cuIpcCloseMemHandle", ""},
    Rule{"cuMemCreate", 10020, "cuMemCreate", ""},
    Rule{"cuMemRelease", 10020, "cuMemRelease", ""},
    Rule{"cuMemMap", 10020, "cuMemMap", ""},
    Rule{"cuMemUnmap", 10020, "cuMemUnmap", ""},
    Rule{"cuMemSetAccess", 10020, "cuMemSetAccess", ""},
    Rule{"cuMemAddressFree", 10020, "cuMemAddressFree", ""},
    Rule{"cuMemRetainAllocationHandle", 11000, "cuMemRetainAllocationHandle", ""},
    Rule{"cuMemGetAllocationPropertiesFromHandle", 10020, "cuMemGetAllocationPropertiesFromHandle", ""},
    Rule{"cuMemExportToShareableHandle", 10020, "cuMemExportToShareableHandle", ""},
    Rule{"cuMemGetHandleForAddressRange", 11070, "cuMemGetHandleForAddressRange", ""},
    // Copies.
    Rule{"cuMemcpy", 4000, "cuMemcpy", "cuMemcpy_ptds"},
    Rule{"cuMemcpyAsync", 4000, "cuMemcpyAsync", "cuMemcpyAsync_ptsz"},
    Rule{"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"},
    Rule{"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds"},
    Rule{"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds"},
    Rule{"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz"},
    Rule{"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz"},
    Rule{"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz"},
    Rule{"cuMemcpyPeer", 4000, "cuMemcpyPeer", "cuMemcpyPeer_ptds"},
    Rule{"cuMemcpyPeerAsync", 4000, "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz"},
    Rule{"cuMemcpy2D", 3020, "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds"},
    Rule{"cuMemcpy2DUnaligned", 3020, "cuMemcpy2DUnaligned_v2", "cuMemcpy2DUnaligned_v2_ptds"},
    Rule{"cuMemcpy2DAsync", 3020, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz"},
    Rule{"cuMemcpy3D", 3020, "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds"},
    Rule{"cuMemcpy3DAsync", 3020, "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz"},
    Rule{"cuMemcpyBatchAsync", 12080, "cuMemcpyBatchAsync", "cuMemcpyBatchAsync_ptsz"},
    Rule{"cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz"},
    Rule{"cuMemcpy3DBatchAsync", 12080, "cuMemcpy3DBatchAsync", "cuMemcpy3DBatchAsync_ptsz"},
    Rule{"cuMemcpy3DBatchAsync", 13000, "cuMemcpy3DBatchAsync_v2", "cuMemcpy3DBatchAsync_v2_ptsz"},
    // Memsets.
    Rule{"cuMemsetD8", 3020, "cuMemsetD8_v2", "cuMemsetD8_v2_ptds"},
    Rule{"cuMemsetD16", 3020, "cuMemsetD16_v2", "cuMemsetD16_v2_ptds"},
    Rule{"cuMemsetD32", 3020, "cuMemsetD32_v2", "cuMemsetD32_v2_ptds"},
    Rule{"cuMemsetD2D8", 3020, "cuMemsetD2D8_v2", "cuMemsetD2D8_v2_ptds"},
    Rule{"cuMemsetD2D16", 3020, "cuMemsetD2D16_v2", "cuMemsetD2D16_v2_ptds"},
    Rule{"cuMemsetD2D32", 3020, "cuMemsetD2D32_v2", "cuMemsetD2D32_v2_ptds"},
    Rule{"cuMemsetD8Async", 3020, "cuMemsetD8Async", "cuMemsetD8Async_ptsz"},
    Rule{"cuMemsetD16Async", 3020, "cuMemsetD16Async", "cuMemsetD16Async_ptsz"},
    Rule{"cuMemsetD32Async", 3020, "cuMemsetD32Async", "cuMemsetD32Async_ptsz"},
    Rule{"cuMemsetD2D8Async", 3020, "cuMemsetD2D8Async", "cuMemsetD2D8Async_ptsz"},
    Rule{"cuMemsetD2D16Async", 3020, "cuMemsetD2D16Async", "cuMemsetD2D16Async_ptsz"},
    Rule{"cuMemsetD2D32Async", 3020, "cuMemsetD2D32Async", "cuMemsetD2D32Async_ptsz"},
    // Launches.
    Rule{"cuLaunchKernel", 4000, "cuLaunchKernel", "cuLaunchKernel_ptsz"},
    Rule{"cuLaunchKernelEx", 11060, "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"},
    Rule{"cuLaunchCooperativeKernel", 9000, "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"},
    Rule{"cuGraphLaunch", 10000, "cuGraphLaunch", "cuGraphLaunch_ptsz"},
    // Pinned host memory released by the driver.
    Rule{"cuMemFreeHost", 2000, "cuMemFreeHost", ""},
    Rule{"cuMemHostUnregister", 4000, "cuMemHostUnregister", ""},
    // Synchronisation.
    Rule{"cuCtxSynchronize", 2000, "cuCtxSynchronize", ""},
    Rule{"cuCtxSynchronize", 13000, "cuCtxSynchronize_v2", ""},
    Rule{"cuStreamSynchronize", 2000, "cuStreamSynchronize", "cuStreamSynchronize_ptsz"},
    Rule{"cuEventSynchronize", 2000, "cuEventSynchronize", ""},
    Rule{"cuStreamDestroy", 4000, "cuStreamDestroy_v2", ""},
    // Stream capture.
    Rule{"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz"},
    Rule{"cuStreamBeginCaptureToGraph", 12030, "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz"},
    Rule{"cuStreamEndCapture", 10000, "cuStreamEndCapture", "cuStreamEndCapture_ptsz"},
    // Information.
    Rule{"cuInit", 2000, "cuInit", ""},
    Rule{"cuMemGetInfo", 3020, "cuMemGetInfo_v2", ""},
    Rule{"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2", ""},
    Rule{"cuPointerGetAttribute", 4000, "cuPointerGetAttribute", ""},
    Rule{"cuPointerGetAttributes", 7000, "cuPointerGetAttributes", ""},
    Rule{"cuPointerSetAttribute", 6000, "cuPointerSetAttribute", ""},
    // Symbol resolution.
    Rule{"cuGetProcAddress", 11030, "cuGetProcAddress", ""},
    Rule{"cuGetProcAddress", 12000, "cuGetProcAddress_v2", ""},
};

} // namespace

std::string_view exportedNameFor(std::string_view symbol, int cudaVersion, bool perThreadDefaultStream) {
  const Rule* best = nullptr;
  for (const Rule& rule : kRules) {
    if (rule.symbol == symbol && rule.since <= cudaVersion && (best == nullptr || rule.since > best->since)) {
      best = &rule;
    }
  }
  if (best == nullptr) return {};
  if (perThreadDefaultStream && cudaVersion >= kPerThreadSince && !best->perThread.empty()) return best->perThread;
  return best->legacy;
}

} // namespace mqx::hook
