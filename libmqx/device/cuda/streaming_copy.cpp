#include "device/cuda/streaming_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace mqx::device::cuda {

void streamingCopy(void* destination, const void* source, std::size_t bytes) {
#if defined(__x86_64__)
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
  // Streaming stores need 16-byte aligned destinations: copy up to the first
  // aligned address plainly.
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16);
  std::memcpy(to, from, head);
  std::size_t done = head;
  for (; done + 64 <= bytes; done += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + done));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + done + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + done + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + done + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + done), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + done + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + done + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + done + 48), d);
  }
  std::memcpy(to + done, from + done, bytes - done);
  // Streaming stores are weakly ordered: fence them before the DMA is queued.
  _mm_sfence();
#else
  std::memcpy(destination, source, bytes);
#endif
}

} // namespace mqx::device::cuda
