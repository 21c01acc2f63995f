// libmqx's own C entry points: access advice (called by libmqx_advice's
// cudaAdvice, found through dlsym) and a statistics snapshot for tests and
// benchmarks.
#include <cstdint>
#include <cstring>
#include <string>

#include "hook/export.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

// flags: 1 input, 2 output, 3 both. 0 on success; CUDA_ERROR_INVALID_VALUE
// for other flags or an address outside every managed region. A process mqx
// does not manage has nothing to advise: success.
MQX_EXPORT int mqx_advise(std::uint64_t address, int flags) {
  if (flags < 1 || flags > 3) return CUDA_ERROR_INVALID_VALUE;
  MemoryManager* manager = Runtime::instance().manager();
  if (manager == nullptr) return CUDA_SUCCESS;
  return guarded("cudaAdvice",
                 [&] { return managedResult("cudaAdvice", manager->advise(address, static_cast<Access>(flags))); });
}

// 1 when mqx manages this process' device memory.
MQX_EXPORT int mqx_active() { return Runtime::instance().manager() != nullptr ? 1 : 0; }

// Writes the statistics as JSON ("{}" when inactive) into buffer, truncated
// and NUL-terminated; returns the full length.
MQX_EXPORT std::size_t mqx_statistics_json(char* buffer, std::size_t size) {
  std::string json = "{}";
  if (MemoryManager* manager = Runtime::instance().manager()) {
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
