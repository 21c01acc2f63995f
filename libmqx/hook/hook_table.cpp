#include "hook/hook_table.hpp"

#include <algorithm>
#include <array>

#include "hook/hook_declarations.hpp"

namespace mqx::hook {
namespace {

auto sortedTable() {
  std::array table{
#define MQX_HOOK(family, name) HookEntry{#name, reinterpret_cast<void*>(&::name), HookFamily::family},
#include "hook/hook_list.inc"
#undef MQX_HOOK
  };
  std::sort(table.begin(), table.end(), [](const HookEntry& a, const HookEntry& b) { return a.name < b.name; });
  return table;
}

// Built once, on first use (reinterpret_cast rules out constexpr).
const auto& table() {
  static const auto sorted = sortedTable();
  return sorted;
}

} // namespace

const HookEntry* findHook(std::string_view exportedName) noexcept {
  const auto& entries = table();
  auto it = std::lower_bound(entries.begin(), entries.end(), exportedName,
                             [](const HookEntry& entry, std::string_view name) { return entry.name < name; });
  return it != entries.end() && it->name == exportedName ? &*it : nullptr;
}

const HookEntry* hookTableBegin() noexcept { return table().data(); }
const HookEntry* hookTableEnd() noexcept { return table().data() + table().size(); }

} // namespace mqx::hook
