// Reading a page's host image into application memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/page_state.hpp"

namespace mqx {

// The application's buffer, except for the saved edges (SourceEdges): the
// buffer's own bytes there may have changed since the copy.
inline void readCowSource(const HostImage& image, std::size_t offset, std::size_t bytes, std::byte* out) {
  const std::size_t end = offset + bytes;
  const std::size_t head = image.edges ? image.edges->headBytes : 0;
  const std::size_t tailStart = image.edges ? image.edges->tailStart : SIZE_MAX;
  for (std::size_t at = offset; at < end;) {
    if (at < head) {
      const std::size_t n = std::min(end, head) - at;
      std::memcpy(out + (at - offset), image.edges->head() + at, n);
      at += n;
    } else if (at >= tailStart) {
      const std::size_t n = end - at;
      std::memcpy(out + (at - offset), image.edges->tail() + (at - tailStart), n);
      at += n;
    } else {
      const std::size_t n = std::min(end, tailStart) - at;
      std::memcpy(out + (at - offset), image.source + at, n);
      at += n;
    }
  }
}

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
  case HostImageKind::CowSource: readCowSource(image, offset, bytes, out); break;
  case HostImageKind::Swap: std::memcpy(out, image.slot + offset, bytes); break;
  }
}

} // namespace mqx
