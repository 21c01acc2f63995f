#include "device/cuda/real_dlsym.hpp"

#include <dlfcn.h>

#include <atomic>
#include <initializer_list>

namespace mqx::device::cuda {
namespace {

using DlsymFunction = void* (*)(void*, const char*);

// dlvsym is not interposed, so it reaches the C library. glibc 2.34 moved
// dlsym into libc.so.6 under the version GLIBC_2.34; older C libraries (and
// the compatibility symbol) carry GLIBC_2.2.5 on x86-64.
DlsymFunction findRealDlsym() noexcept {
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}) {
    if (void* found = dlvsym(RTLD_NEXT, "dlsym", version)) return reinterpret_cast<DlsymFunction>(found);
  }
  return nullptr;
}

} // namespace

void* realDlsym(void* handle, const char* name) noexcept {
  // A relaxed cache is enough: every thread computes the same value.
  static std::atomic<DlsymFunction> cached{nullptr};
  DlsymFunction function = cached.load(std::memory_order_relaxed);
  if (function == nullptr) {
    function = findRealDlsym();
    if (function == nullptr) return nullptr;
    cached.store(function, std::memory_order_relaxed);
  }
  return function(handle, name);
}

} // namespace mqx::device::cuda
