// Declarations of every hook (hook_list.inc) with the signature of its real
// counterpart: a hook whose definition does not match its driver function
// does not compile ("conflicting declaration of C function").
#pragma once

#include <type_traits>

#include "device/cuda/driver_api.hpp"
#include "hook/export.hpp"

#define MQX_HOOK(family, name)                                                                                         \
  MQX_EXPORT                                                                                                           \
  std::remove_pointer_t<decltype(mqx::device::cuda::DriverApi::name)> name;
#include "hook/hook_list.inc"
#undef MQX_HOOK

// dlsym is the other route, interposed in dlsym_hook.cpp.
MQX_EXPORT void* dlsym(void* handle, const char* name);
