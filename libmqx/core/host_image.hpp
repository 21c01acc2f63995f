// Reading a page's host image into application memory.
#pragma once

#include <cstddef>
#include <cstring>

#include "core/page_state.hpp"

namespace mqx {

// Writes `bytes` of the image's content starting at `offset` in the page to
// `out`.
inline void readHostImage(const HostImage& image, std::size_t offset, std::size_t bytes, std::byte* out) {
  switch (image.kind) {
  case HostImageKind::None: break;
  case HostImageKind::Zero: std::memset(out, 0, bytes); break;
  case HostImageKind::Fill:
    if (image.elementSize == 1) {
      std::memset(out, static_cast<int>(image.pattern & 0xFF), bytes);
    } else {
      // The pattern repeats every elementSize bytes from the page start.
      const auto* pattern = reinterpret_cast<const std::byte*>(&image.pattern);
      for (std::size_t i = 0; i < bytes; ++i)
        out[i] = pattern[(offset + i) % image.elementSize];
    }
    break;
  case HostImageKind::CowSource: std::memcpy(out, image.source + offset, bytes); break;
  case HostImageKind::Swap: std::memcpy(out, image.slot + offset, bytes); break;
  }
}

} // namespace mqx
