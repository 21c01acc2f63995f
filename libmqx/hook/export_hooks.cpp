// Memory family, handles that give a managed allocation to another process
// or device (docs/interposer.md, "Handles to other processes").
//
// cuIpcGetMemHandle (torch.multiprocessing's CUDA tensors, NCCL's and vLLM's
// buffers): the allocation is shared (MemoryManager::share: resident until
// freed, its pages' physical memory exportable) and the handle carries an
// mqx ticket (ipc/memory_export) that this process's export server honours.
// cuIpcOpenMemHandle of such a handle, in a process under libmqx, receives
// the pages' descriptors and maps them; the driver's own handles pass
// through both ways. A process without libmqx cannot open an mqx handle: the
// driver refuses it as an invalid value.
//
// cuMemGetHandleForAddressRange (dma-buf) is refused with
// CUDA_ERROR_NOT_SUPPORTED and a line that says why, never passed through:
// a managed region is many physical allocations that change as its pages
// move. Unmanaged memory passes through.
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"
#include "ipc/memory_export.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

bool managed(CUdeviceptr address) {
  Runtime& runtime = Runtime::instance();
  return runtime.hostManager() != nullptr && runtime.owner(address) != nullptr;
}

CUresult refuseExport(const char* call, CUdeviceptr address) {
  log(LogLevel::Error,
      "{}: 0x{:x} is memory mqx manages (paged: its physical memory changes as pages move), which cannot be shared "
      "with another process or device; refused with CUDA_ERROR_NOT_SUPPORTED (docs/interposer.md, \"Handles to other "
      "processes\")",
      call, address);
  return CUDA_ERROR_NOT_SUPPORTED;
}

} // namespace

MQX_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr address) {
  if (!managed(address)) return callReal(&DriverApi::cuIpcGetMemHandle, handle, address);
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Runtime& runtime = Runtime::instance();
  MemoryManager* manager = runtime.owner(address);
  return guarded("cuIpcGetMemHandle", [&] {
    SharedAllocation shared;
    Status status = manager->share(address, &shared);
    if (status == Status::NotSupported) {
      log(LogLevel::Error,
          "cuIpcGetMemHandle: 0x{:x} is memory the program mapped itself (its own VMM) or this device cannot share "
          "memory between processes; refused with CUDA_ERROR_NOT_SUPPORTED (docs/interposer.md, \"Handles to other "
          "processes\")",
          address);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (!ok(status)) {
      log(LogLevel::Error, "cuIpcGetMemHandle: sharing 0x{:x} failed: {}", address, toString(status));
      return toCuResult(status);
    }
    ipc::ExportTicket ticket;
    std::string error;
    status = runtime.memoryExports().offer(std::move(shared), &ticket, &error);
    if (!ok(status)) {
      log(LogLevel::Error, "cuIpcGetMemHandle: {}", error);
      return toCuResult(status);
    }
    ticket.encode(reinterpret_cast<std::byte*>(handle->reserved));
    log(LogLevel::Info, "cuIpcGetMemHandle: 0x{:x} shared as export {} ({} bytes, resident until freed)", address,
        ticket.id, ticket.size);
    return CUDA_SUCCESS;
  });
}

MQX_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* address, CUipcMemHandle handle, unsigned int flags) {
  const auto ticket = ipc::ExportTicket::decode(reinterpret_cast<const std::byte*>(handle.reserved));
  if (!ticket) return callReal(&DriverApi::cuIpcOpenMemHandle_v2, address, handle, flags);
  if (address == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemoryManager* manager = Runtime::instance().activate();
  if (manager == nullptr) {
    log(LogLevel::Error,
        "cuIpcOpenMemHandle: a handle of mqx (export {} of process {}) opens only where mqx manages "
        "the current device, which it does not here",
        ticket->id, ticket->exporter);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded("cuIpcOpenMemHandle", [&] {
    std::vector<SharedPiece> pieces;
    std::string error;
    // Bounded: the exporter answers from a thread of its own at once.
    Status status = ipc::receiveExport(*ticket, std::chrono::seconds(10), &pieces, &error);
    if (!ok(status)) {
      log(LogLevel::Error, "cuIpcOpenMemHandle: {}", error);
      return CUDA_ERROR_INVALID_VALUE;
    }
    DevicePtr base = 0;
    status = manager->openShared(pieces, ticket->mappedBytes, &base);
    if (!ok(status)) {
      log(LogLevel::Error, "cuIpcOpenMemHandle: mapping export {} of process {} failed: {}", ticket->id,
          ticket->exporter, toString(status));
      return toCuResult(status);
    }
    *address = base;
    return CUDA_SUCCESS;
  });
}

MQX_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr address) {
  Runtime& runtime = Runtime::instance();
  Status closed = Status::InvalidValue;
  if (runtime.hostManager() != nullptr)
    runtime.managers().forEach([&](int, MemoryManager& manager) {
      if (closed == Status::InvalidValue) closed = manager.closeShared(address);
    });
  if (closed == Status::InvalidValue) return callReal(&DriverApi::cuIpcCloseMemHandle, address);
  return managedResult("cuIpcCloseMemHandle", closed);
}

MQX_EXPORT CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr address, size_t bytes,
                                                  CUmemRangeHandleType type, unsigned long long flags) {
  if (managed(address)) return refuseExport("cuMemGetHandleForAddressRange", address);
  return callReal(&DriverApi::cuMemGetHandleForAddressRange, handle, address, bytes, type, flags);
}
