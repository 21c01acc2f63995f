// CopyShape: a 2D or 3D copy (CUDA_MEMCPY2D/3D) as plain numbers, and its
// decomposition into contiguous runs. The core copies linear ranges, so a
// pitched copy with a managed side becomes one run per row, merged into
// slices or one block where both sides are contiguous. No cuda.h here: the
// decomposition is tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mqx::hook {

struct CopySide {
  std::uintptr_t base = 0; // host pointer or device address
  std::size_t x = 0;       // bytes into a row
  std::size_t y = 0;       // rows into a slice
  std::size_t z = 0;       // slices
  std::size_t pitch = 0;   // bytes per row (0: the copy's width)
  std::size_t height = 0;  // rows per slice (0: the copy's height)

  std::uintptr_t address(std::size_t row, std::size_t slice, std::size_t width, std::size_t copyHeight) const {
    std::size_t rowBytes = pitch != 0 ? pitch : width;
    std::size_t sliceRows = height != 0 ? height : copyHeight;
    return base + ((z + slice) * sliceRows + y + row) * rowBytes + x;
  }
  bool contiguousRows(std::size_t width) const { return pitch == 0 || pitch == width; }
  bool contiguousSlices(std::size_t width, std::size_t copyHeight) const {
    return contiguousRows(width) && (height == 0 || height == copyHeight);
  }
};

struct CopyShape {
  CopySide source;
  CopySide destination;
  std::size_t width = 0;  // bytes per row
  std::size_t height = 1; // rows
  std::size_t depth = 1;  // slices

  // Bytes from the first to one past the last byte a side touches.
  std::size_t extent(const CopySide& side) const {
    if (width == 0 || height == 0 || depth == 0) return 0;
    return side.address(height - 1, depth - 1, width, height) + width - side.address(0, 0, width, height);
  }

  // Calls run(sourceAddress, destinationAddress, bytes) for each contiguous
  // run, in order; stops at and returns the first non-zero result.
  template <typename Run>
  auto forEachRun(Run&& run) const -> decltype(run(std::uintptr_t{}, std::uintptr_t{}, std::size_t{})) {
    using Result = decltype(run(std::uintptr_t{}, std::uintptr_t{}, std::size_t{}));
    if (width == 0 || height == 0 || depth == 0) return Result{};
    auto at = [&](const CopySide& side, std::size_t row, std::size_t slice) {
      return side.address(row, slice, width, height);
    };
    if (source.contiguousSlices(width, height) && destination.contiguousSlices(width, height)) {
      return run(at(source, 0, 0), at(destination, 0, 0), width * height * depth);
    }
    bool wholeSlices = source.contiguousRows(width) && destination.contiguousRows(width);
    for (std::size_t slice = 0; slice < depth; ++slice) {
      if (wholeSlices) {
        if (auto result = run(at(source, 0, slice), at(destination, 0, slice), width * height); result != Result{})
          return result;
        continue;
      }
      for (std::size_t row = 0; row < height; ++row) {
        if (auto result = run(at(source, row, slice), at(destination, row, slice), width); result != Result{})
          return result;
      }
    }
    return Result{};
  }
};

} // namespace mqx::hook
