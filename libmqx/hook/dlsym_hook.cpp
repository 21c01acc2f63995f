// The dlsym route: a program (or cudart) that opens libcuda.so.1 and looks a
// hooked function up by name gets the hook. Everything else dlsym finds is
// returned unchanged, including for RTLD_NEXT, which is resolved relative to
// the real caller (the C library would otherwise see libmqx as the caller).
#include <dlfcn.h>
#include <link.h>

#include "device/cuda/real_dlsym.hpp"
#include "hook/hook_declarations.hpp"
#include "hook/hook_resolution.hpp"

using mqx::device::cuda::realDlsym;

namespace {

// RTLD_NEXT for a caller other than libmqx: the first definition in an
// object loaded after the caller's.
void* nextAfter(const void* caller, const char* name) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) {
    return realDlsym(RTLD_NEXT, name);
  }
  for (link_map* next = map->l_next; next != nullptr; next = next->l_next) {
    if (next->l_name == nullptr || next->l_name[0] == '\0') continue;
    // A link_map is no dlsym handle for objects the program did not dlopen;
    // dlopen with RTLD_NOLOAD gives a real one without loading anything.
    void* handle = dlopen(next->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* found = realDlsym(handle, name); // searches `next` and its dependencies
    dlclose(handle);
    link_map* owner = nullptr;
    Dl_info foundInfo{};
    if (found != nullptr && dladdr1(found, &foundInfo, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) != 0 &&
        owner == next) {
      return found;
    }
  }
  return nullptr;
}

} // namespace

MQX_EXPORT void* dlsym(void* handle, const char* name) {
  void* found = handle == RTLD_NEXT ? nextAfter(__builtin_return_address(0), name) : realDlsym(handle, name);
  return mqx::hook::hookForDlsym(name, found);
}
