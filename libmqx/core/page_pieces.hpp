// The pages an operation on a byte range of one region touches, and how
// much of each (paper §4.1: copies and memsets are split at page borders,
// so that each page keeps its own coherence state).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/region.hpp"

namespace mqx {

// One page's share of an operation on a byte range.
struct Piece {
  std::uint32_t page;
  std::size_t offset; // in the page
  std::size_t bytes;
  std::size_t position; // in the operation
};

inline std::vector<Piece> piecesOf(const Region& region, DevicePtr address, std::size_t bytes) {
  std::vector<Piece> pieces;
  std::size_t position = 0;
  while (position < bytes) {
    const std::size_t regionOffset = address + position - region.base;
    const auto page = static_cast<std::uint32_t>(regionOffset / region.pageSize);
    const std::size_t offset = regionOffset % region.pageSize;
    const std::size_t length = std::min(bytes - position, region.pageSize - offset);
    pieces.push_back({page, offset, length, position});
    position += length;
  }
  return pieces;
}

// Whether the piece is all of its page's data.
inline bool coversPage(const Region& region, const Piece& piece) {
  return piece.offset == 0 && piece.bytes == region.pageDataBytes(piece.page);
}

} // namespace mqx
