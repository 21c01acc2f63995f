// TraceEvent: one event of the Chrome trace-event format (the JSON that
// chrome://tracing and the Perfetto UI open): a complete span (ph "X"), an
// instant (ph "i") or a counter (ph "C"). Fixed size and no allocation, so
// that recording one is a copy into the recorder's buffer; names and
// argument keys are string literals (static storage), a label is copied.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace mqx::trace {

enum class Phase : char { Complete = 'X', Instant = 'i', Counter = 'C' };

struct TraceArgument {
  const char* key = nullptr; // a string literal; null: unused
  std::uint64_t value = 0;
};

struct TraceEvent {
  static constexpr std::size_t kArguments = 4;
  static constexpr std::size_t kLabelBytes = 48;

  Phase phase = Phase::Instant;
  const char* name = "";         // a string literal
  const char* category = "";     // a string literal: "transfer", "eviction", ...
  std::uint64_t timestampNs = 0; // CLOCK_MONOTONIC: comparable across the processes of a node
  std::uint64_t durationNs = 0;  // Complete only
  std::uint64_t track = 0;       // tid: a thread, or a stream's track (trace_tracks.hpp)
  TraceArgument arguments[kArguments];
  char label[kLabelBytes] = {}; // optional "label" argument (a query or kernel name)

  TraceEvent& argument(const char* key, std::uint64_t value) {
    for (auto& slot : arguments)
      if (slot.key == nullptr) {
        slot = {key, value};
        break;
      }
    return *this;
  }
  TraceEvent& withLabel(std::string_view text) {
    const std::size_t bytes = std::min(text.size(), kLabelBytes - 1);
    std::memcpy(label, text.data(), bytes);
    label[bytes] = '\0';
    return *this;
  }
};

} // namespace mqx::trace
