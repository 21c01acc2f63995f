// Copy family, batched copies: cuMemcpyBatchAsync (CUDA 12.8's ABI, with
// failIdx; CUDA 13's _v2) and cuMemcpy3DBatchAsync. A batch whose copies
// have no managed side passes through as one call. One that reaches a
// managed region is issued copy by copy, in order, on its stream, through
// the one-copy hooks (cuMemcpyAsync): every write into a managed page is
// then seen by its manager (a copy-on-write image or a lazy source never
// survives it), and stream order is at least the ordering the batch
// promises. The batch's attributes are hints (source access order, location
// hints, overlap) that a stream-ordered copy satisfies. A 3D batch that
// reaches a managed region is refused with CUDA_ERROR_NOT_SUPPORTED and a
// line saying so, never passed through unseen (docs/interposer.md, "Batched
// copies").
#include <cstdint>

#include "hook/copy_batch.hpp"
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

bool managed(CUdeviceptr address) { return Runtime::instance().owner(address) != nullptr; }

// Whether some copy of the batch has a managed side (false when nothing is
// managed, or the arrays are missing: the driver judges those).
bool reachesManaged(const CUdeviceptr* destinations, const CUdeviceptr* sources, std::size_t count) {
  if (Runtime::instance().hostManager() == nullptr || destinations == nullptr || sources == nullptr) return false;
  for (std::size_t i = 0; i < count; ++i)
    if (managed(destinations[i]) || managed(sources[i])) return true;
  return false;
}

template <typename PassThrough, typename CopyOne>
CUresult batch(CUdeviceptr* destinations, CUdeviceptr* sources, std::size_t* sizes, std::size_t count,
               std::size_t* failIndex, CUstream stream, bool perThread, PassThrough passThrough, CopyOne copyOne) {
  if (capturing(streamOf(stream, perThread)) || !reachesManaged(destinations, sources, count)) return passThrough();
  return guarded("cuMemcpyBatchAsync", [&] {
    return forEachCopyOfBatch(destinations, sources, sizes, count, failIndex, CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE,
                              copyOne);
  });
}

// A 3D batch operand that is a managed pointer.
bool managedOperand(const CUmemcpy3DOperand& operand) {
  return operand.type == CU_MEMCPY_OPERAND_TYPE_POINTER && managed(operand.op.ptr.ptr);
}

template <typename PassThrough>
CUresult batch3D(std::size_t count, const CUDA_MEMCPY3D_BATCH_OP* operations, PassThrough passThrough) {
  if (Runtime::instance().hostManager() == nullptr || operations == nullptr) return passThrough();
  for (std::size_t i = 0; i < count; ++i) {
    if (managedOperand(operations[i].src) || managedOperand(operations[i].dst)) {
      log(LogLevel::Error,
          "cuMemcpy3DBatchAsync: copy {} of the batch reaches memory mqx manages, which a 3D batch cannot (issue "
          "each copy with cuMemcpy3DAsync); refused with CUDA_ERROR_NOT_SUPPORTED",
          i);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return passThrough();
}

} // namespace

MQX_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                       CUmemcpyAttributes* attributes, size_t* attributeIndices, size_t attributeCount,
                                       size_t* failIndex, CUstream stream) {
  return batch(
      dsts, srcs, sizes, count, failIndex, stream, false,
      [&] {
        return callReal(&DriverApi::cuMemcpyBatchAsync, dsts, srcs, sizes, count, attributes, attributeIndices,
                        attributeCount, failIndex, stream);
      },
      [&](CUdeviceptr dst, CUdeviceptr src, size_t bytes) { return cuMemcpyAsync(dst, src, bytes, stream); });
}
MQX_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                            CUmemcpyAttributes* attributes, size_t* attributeIndices,
                                            size_t attributeCount, size_t* failIndex, CUstream stream) {
  return batch(
      dsts, srcs, sizes, count, failIndex, stream, true,
      [&] {
        return callReal(&DriverApi::cuMemcpyBatchAsync_ptsz, dsts, srcs, sizes, count, attributes, attributeIndices,
                        attributeCount, failIndex, stream);
      },
      [&](CUdeviceptr dst, CUdeviceptr src, size_t bytes) { return cuMemcpyAsync_ptsz(dst, src, bytes, stream); });
}
MQX_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                          CUmemcpyAttributes* attributes, size_t* attributeIndices,
                                          size_t attributeCount, CUstream stream) {
  return batch(
      dsts, srcs, sizes, count, nullptr, stream, false,
      [&] {
        return callReal(&DriverApi::cuMemcpyBatchAsync_v2, dsts, srcs, sizes, count, attributes, attributeIndices,
                        attributeCount, stream);
      },
      [&](CUdeviceptr dst, CUdeviceptr src, size_t bytes) { return cuMemcpyAsync(dst, src, bytes, stream); });
}
MQX_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                               CUmemcpyAttributes* attributes, size_t* attributeIndices,
                                               size_t attributeCount, CUstream stream) {
  return batch(
      dsts, srcs, sizes, count, nullptr, stream, true,
      [&] {
        return callReal(&DriverApi::cuMemcpyBatchAsync_v2_ptsz, dsts, srcs, sizes, count, attributes, attributeIndices,
                        attributeCount, stream);
      },
      [&](CUdeviceptr dst, CUdeviceptr src, size_t bytes) { return cuMemcpyAsync_ptsz(dst, src, bytes, stream); });
}

MQX_EXPORT CUresult cuMemcpy3DBatchAsync(size_t count, CUDA_MEMCPY3D_BATCH_OP* operations, size_t* failIndex,
                                         unsigned long long flags, CUstream stream) {
  return batch3D(count, operations, [&] {
    return callReal(&DriverApi::cuMemcpy3DBatchAsync, count, operations, failIndex, flags, stream);
  });
}
MQX_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t count, CUDA_MEMCPY3D_BATCH_OP* operations, size_t* failIndex,
                                              unsigned long long flags, CUstream stream) {
  return batch3D(count, operations, [&] {
    return callReal(&DriverApi::cuMemcpy3DBatchAsync_ptsz, count, operations, failIndex, flags, stream);
  });
}
MQX_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t count, CUDA_MEMCPY3D_BATCH_OP* operations, unsigned long long flags,
                                            CUstream stream) {
  return batch3D(count, operations,
                 [&] { return callReal(&DriverApi::cuMemcpy3DBatchAsync_v2, count, operations, flags, stream); });
}
MQX_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t count, CUDA_MEMCPY3D_BATCH_OP* operations,
                                                 unsigned long long flags, CUstream stream) {
  return batch3D(count, operations,
                 [&] { return callReal(&DriverApi::cuMemcpy3DBatchAsync_v2_ptsz, count, operations, flags, stream); });
}
