// libmqx's own C entry points: access advice (called by libmqx_advice's
// cudaAdvice, found through dlsym) and a statistics snapshot for tests and
// benchmarks.
#include <cstdint>
#include <cstring>
#include <string>

#include "hook/export.hpp"
#include "hook/hook_support.hpp"
#include "ipc/admission_client.hpp"

using namespace mqx;
using namespace mqx::hook;

// flags: 1 input, 2 output, 3 both. 0 on success; CUDA_ERROR_INVALID_VALUE
// for other flags or an address outside every managed region. A process mqx
// does not manage has nothing to advise: success.
MQX_EXPORT int mqx_advise(std::uint64_t address, int flags) {
  if (flags < 1 || flags > 3) return CUDA_ERROR_INVALID_VALUE;
  Runtime& runtime = Runtime::instance();
  if (runtime.hostManager() == nullptr) return CUDA_SUCCESS;
  MemoryManager* manager = runtime.owner(address);
  if (manager == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return guarded("cudaAdvice",
                 [&] { return managedResult("cudaAdvice", manager->advise(address, static_cast<Access>(flags))); });
}

// mqx_declare_resizable of libmqx_advice (advice.h): the kernel `function` (a CUfunction or CUkernel, or cudart's
// cudaFunction_t or cudaKernel_t, which are the same handles) is written for
// any grid and block size: the launch service may choose them
// (docs/kernelopt.md). 0; CUDA_ERROR_INVALID_VALUE for a null handle.
MQX_EXPORT int mqx_declare_resizable_handle(const void* function) {
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Runtime::instance().declareResizable(reinterpret_cast<FunctionHandle>(function));
  return CUDA_SUCCESS;
}

// The same by the kernel's name as cuFuncGetName reports it.
MQX_EXPORT int mqx_declare_resizable_by_name(const char* name) {
  if (name == nullptr || *name == '\0') return CUDA_ERROR_INVALID_VALUE;
  try {
    Runtime::instance().declareResizable(std::string(name));
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

// One operator of the running query's plan (paper §5): expected seconds and
// device bytes; mqxd gets the plan's weighted and peak demand so far. 0 on
// success, and without mqxd's node (nothing to declare to);
// CUDA_ERROR_INVALID_VALUE for seconds that are not positive and finite.
MQX_EXPORT int mqx_node_declare_operator(double seconds, std::uint64_t bytes) {
  if (!(seconds > 0) || seconds > 1e300) return CUDA_ERROR_INVALID_VALUE;
  ipc::AdmissionClient* admission = Runtime::instance().nodeAdmission();
  if (admission == nullptr) return CUDA_SUCCESS;
  try {
    admission->declareOperator(seconds, bytes);
  } catch (...) {
  }
  return CUDA_SUCCESS;
}

// 1 when mqx manages this process' device memory.
MQX_EXPORT int mqx_active() { return Runtime::instance().hostManager() != nullptr ? 1 : 0; }

// Writes the statistics as JSON ("{}" when inactive) into buffer, truncated
// and NUL-terminated; returns the full length.
MQX_EXPORT std::size_t mqx_statistics_json(char* buffer, std::size_t size) {
  std::string json = "{}";
  // The current device's manager, else the first one's.
  const Runtime& runtime = Runtime::instance();
  MemoryManager* manager = runtime.current().manager;
  if (manager == nullptr) manager = runtime.hostManager();
  if (manager != nullptr) {
    try {
      json = manager->statistics().toJson();
    } catch (...) {
    }
  }
  if (buffer != nullptr && size > 0) {
    std::size_t copied = std::min(size - 1, json.size());
    std::memcpy(buffer, json.data(), copied);
    buffer[copied] = '\0';
  }
  return json.size();
}
