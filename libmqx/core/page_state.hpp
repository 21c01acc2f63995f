// PageState: where the valid copy of one page of a region lives
// (docs/architecture.md decision 3, paper §4.1 "page-based coherence management").
//
// A page has at most two copies: the device copy (when `deviceValid`) and one
// host image. The host image is either a description of the content (zeros,
// a fill pattern), the application's own buffer protected copy-on-write, or a
// slot of the swap buffer. Invariant: deviceValid || host.kind != None. When
// both exist they are equal: the page is clean and eviction moves no data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mqx {

enum class HostImageKind : std::uint8_t {
  None,      // no host copy: the device copy is the only (dirty) one
  Zero,      // never written: reads as zeros
  Fill,      // a memset pattern over the whole page
  CowSource, // the application's buffer, write-protected until it changes
  Swap,      // a slot of the swap buffer
};

// The bytes of a copy-on-write source that lie on host pages it shares with
// other data. A buffer from malloc starts 16 bytes into a host page whose
// first bytes are malloc's header, so its first and last host pages cannot be
// write-protected (any thread may write them, mqx itself included). Those
// bytes, under one host page at each end, are saved at copy time; the rest
// of the page stays in the application's buffer. Without this the whole
// device page (8 MiB) at each end of every column would be copied on the
// host at copy time.
struct SourceEdges {
  std::size_t headBytes = 0;          // the page's first bytes
  std::size_t tailBytes = 0;          // the page's last bytes
  std::size_t tailStart = 0;          // where the tail begins: the page's data bytes - tailBytes
  std::unique_ptr<std::byte[]> bytes; // head, then tail

  const std::byte* head() const { return bytes.get(); }
  const std::byte* tail() const { return bytes.get() + headBytes; }
};

struct HostImage {
  HostImageKind kind = HostImageKind::Zero;
  std::uint8_t elementSize = 1;      // Fill: 1, 2 or 4
  std::uint32_t pattern = 0;         // Fill
  const std::byte* source = nullptr; // CowSource: the page's first byte in the application's buffer
  std::byte* slot = nullptr;         // Swap
  // CowSource: the saved edges, if any; shared by the pages that share the
  // image (a device-to-device copy of a lazily copied page).
  std::shared_ptr<const SourceEdges> edges;

  static HostImage of(HostImageKind kind) {
    HostImage image;
    image.kind = kind;
    return image;
  }
  static HostImage inSwap(std::byte* slot) {
    HostImage image = of(HostImageKind::Swap);
    image.slot = slot;
    return image;
  }
  static HostImage filled(unsigned elementSize, std::uint32_t pattern) {
    HostImage image = of(HostImageKind::Fill);
    image.elementSize = static_cast<std::uint8_t>(elementSize);
    image.pattern = pattern;
    return image;
  }
  static HostImage inBuffer(const std::byte* source) {
    HostImage image = of(HostImageKind::CowSource);
    image.source = source;
    return image;
  }

  // CowSource: the part of a page of `dataBytes` read from the application's
  // buffer (and write-protected there).
  const std::byte* protectedStart() const { return source + (edges ? edges->headBytes : 0); }
  std::size_t protectedBytes(std::size_t dataBytes) const {
    return edges ? edges->tailStart - edges->headBytes : dataBytes;
  }
};

// Where a page's virtual range points (docs/architecture.md, "every page
// always mapped"): device memory (`backed`), or, where the swap buffer's
// slots are host blocks, the page's `backing` slot. A page that maps its
// backing either holds its current bytes there (host.kind == Swap and
// host.slot == backing) or is *pending*: its image (zeros, a fill, a
// copy-on-write source) is not yet written into the backing, which must
// happen before any launch that may reach the page.
//
// Read access is free; every write is a named transition of PageStore
// (core/page_store.hpp), which checks the transition's precondition and the
// invariants above before it changes anything.
class PageState {
public:
  const HostImage& host() const { return host_; }
  bool backed() const { return backed_; }                    // physical device memory mapped under the page
  std::byte* backing() const { return backing_; }            // !backed: the host block mapped under the page, if any
  bool deviceValid() const { return deviceValid_; }          // the device copy holds the current content
  std::uint32_t pins() const { return pins_; }               // in-flight operations that use the device copy
  std::uint64_t lastUse() const { return lastUse_; }         // logical time of the last launch that used it
  std::uint64_t useCount() const { return useCount_; }       // launches that used it
  std::uint64_t previousUse() const { return previousUse_; } // the use before lastUse (0: none)
  // Counts the transitions that changed the page (all but pins and uses):
  // a write-back issued ahead of need holds the page's bytes only if none
  // happened while it ran (ResidencyManager, residency_write_ahead.cpp).
  std::uint32_t generation() const { return generation_; }

  bool dirty() const { return deviceValid_ && host_.kind == HostImageKind::None; }
  bool hostMapped() const { return backing_ != nullptr; }
  bool pending() const { return backing_ != nullptr && host_.kind != HostImageKind::Swap; }
  bool pinned() const { return pins_ != 0; }

private:
  friend class PageStore;

  HostImage host_;
  bool backed_ = false;
  std::byte* backing_ = nullptr;
  bool deviceValid_ = false;
  std::uint32_t pins_ = 0;
  std::uint64_t lastUse_ = 0;
  std::uint64_t useCount_ = 0;
  std::uint64_t previousUse_ = 0;
  std::uint32_t generation_ = 0;
};

} // namespace mqx
