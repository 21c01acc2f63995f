// Turning a real driver function pointer, as a symbol-resolution route hands
// it out, into the matching hook. Both routes first identify the pointer by
// its exported name (dladdr), which gives the exact ABI; the cuGetProcAddress
// route falls back to the version rules for a driver that hands out
// addresses that are not exported symbols.
#pragma once

#include <cstdint>

namespace mqx::hook {

// cuGetProcAddress(symbol, cudaVersion, flags) returned `real`.
void* hookForProcAddress(const char* symbol, void* real, int cudaVersion, std::uint64_t flags);

// dlsym(handle, name) found `found`: the hook when `found` is libcuda's
// definition of a hooked name, else `found` itself.
void* hookForDlsym(const char* name, void* found);

} // namespace mqx::hook
