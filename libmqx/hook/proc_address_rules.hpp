// Which exported driver symbol cuGetProcAddress hands out for a base name,
// a CUDA version and the per-thread-default-stream flag, for the hooked entry
// points (from cudaTypedefs.h: PFN_<name>_v<version>[_ptds|_ptsz]).
//
// The interposer first identifies the real pointer the driver returned by
// its exported name (dladdr); these rules are the fallback for a driver that
// hands out addresses that are not exported symbols.
#pragma once

#include <cstdint>
#include <string_view>

namespace mqx::hook {

// The exported name, or an empty view when the name is not hooked (or the
// version is older than any hooked ABI of it).
std::string_view exportedNameFor(std::string_view symbol, int cudaVersion, bool perThreadDefaultStream);

} // namespace mqx::hook
