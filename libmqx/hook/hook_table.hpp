// Lookup in the hook table (hook_list.inc) by exported symbol name, for the
// routes that hand out function pointers (dlsym, cuGetProcAddress).
#pragma once

#include <string_view>

namespace mqx::hook {

enum class HookFamily { Memory, Copy, Memset, Launch, Sync, Capture, Info, Resolve };

struct HookEntry {
  std::string_view name;
  void* function;
  HookFamily family;
};

// The hook for an exported driver symbol, or nullptr when it is not hooked.
const HookEntry* findHook(std::string_view exportedName) noexcept;

// All entries, sorted by name.
const HookEntry* hookTableBegin() noexcept;
const HookEntry* hookTableEnd() noexcept;

} // namespace mqx::hook
