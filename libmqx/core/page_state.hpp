// PageState: where the valid copy of one page of a region lives
// (ARCHITECTURE.md decision 3, paper §4.1 "page-based coherence management").
//
// A page has at most two copies: the device copy (when `deviceValid`) and one
// host image. The host image is either a description of the content (zeros,
// a fill pattern), the application's own buffer protected copy-on-write, or a
// slot of the swap buffer. Invariant: deviceValid || host.kind != None. When
// both exist they are equal: the page is clean and eviction moves no data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mqx {

enum class HostImageKind : std::uint8_t {
  None,      // no host copy: the device copy is the only (dirty) one
  Zero,      // never written: reads as zeros
  Fill,      // a memset pattern over the whole page
  CowSource, // the application's buffer, write-protected until it changes
  Swap,      // a slot of the swap buffer
};

struct HostImage {
  HostImageKind kind = HostImageKind::Zero;
  std::uint8_t elementSize = 1;      // Fill: 1, 2 or 4
  std::uint32_t pattern = 0;         // Fill
  const std::byte* source = nullptr; // CowSource: the page's first byte in the application's buffer
  std::byte* slot = nullptr;         // Swap
};

struct PageState {
  HostImage host;
  bool backed = false;      // physical device memory mapped under the page
  bool deviceValid = false; // the device copy holds the current content
  std::uint32_t pins = 0;   // in-flight operations that use the device copy
  std::uint64_t lastUse = 0;
  std::uint64_t useCount = 0;

  bool dirty() const { return deviceValid && host.kind == HostImageKind::None; }
  bool pinned() const { return pins != 0; }
};

} // namespace mqx
