#include "hook/hook_resolution.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <string>
#include <string_view>

#include "common/log.hpp"
#include "hook/hook_table.hpp"
#include "hook/proc_address_rules.hpp"
#include "hook/runtime.hpp"

namespace mqx::hook {
namespace {

// The exported symbol at exactly `address`, or nullptr.
const char* exportedNameAt(void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_saddr != address) return nullptr;
  return info.dli_sname;
}

bool inDriverLibrary(void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  std::string_view file = slash != nullptr ? slash + 1 : info.dli_fname;
  return file.starts_with("libcuda.so");
}

} // namespace

void* hookForProcAddress(const char* symbol, void* real, int cudaVersion, std::uint64_t flags) {
  if (symbol == nullptr || real == nullptr) return real;
  const char* exported = exportedNameAt(real);
  if (exported != nullptr) {
    if (const HookEntry* hook = findHook(exported)) return hook->function;
  }
  bool perThread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::string_view name = exportedNameFor(symbol, cudaVersion, perThread);
  const HookEntry* hook = name.empty() ? nullptr : findHook(name);
  if (hook == nullptr) return real;
  if (exported != nullptr) {
    // An exported function we do not hook under that name: trust the rule
    // only if the rule's symbol is this very function (an alias).
    const auto* api = Runtime::instance().driver();
    std::string copy(name);
    return api != nullptr && api->symbol(copy.c_str()) == real ? hook->function : real;
  }
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    log(LogLevel::Info, "cuGetProcAddress hands out unexported addresses; "
                        "hooks chosen by version rules");
  }
  return hook->function;
}

void* hookForDlsym(const char* name, void* found) {
  if (found == nullptr || name == nullptr || name[0] != 'c' || name[1] != 'u') return found;
  const HookEntry* hook = findHook(name);
  if (hook == nullptr || hook->function == found) return found;
  return inDriverLibrary(found) ? hook->function : found;
}

} // namespace mqx::hook
