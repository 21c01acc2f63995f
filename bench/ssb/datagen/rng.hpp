// The generator's random numbers: xoshiro256** seeded through splitmix64.
// It is fast (a few cycles a draw, which matters at 60 million rows for SF 10)
// and every table, and every fixed-size chunk of lineorder, draws from its own
// stream derived from (seed, stream id). Output is therefore the same for a
// seed whatever the number of threads and the order chunks are generated in.
#pragma once

#include <cstdint>

namespace mqx::ssb {

class Rng {
public:
  Rng(std::uint64_t seed, std::uint64_t stream) {
    // Mixing the stream through splitmix64 before combining keeps streams
    // with neighbouring ids from starting in correlated states.
    std::uint64_t mixer = seed ^ splitmix(stream + 0x632BE59BD9B4E019ull);
    for (std::uint64_t &word : state_)
      word = splitmix(mixer);
  }

  std::uint64_t next() {
    std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [low, high], both inclusive, without modulo bias (Lemire's
  // multiply-and-reject): spec distributions such as "discount 0..10" must be
  // exactly uniform for the selectivity checks to mean anything.
  std::int32_t uniform(std::int32_t low, std::int32_t high) {
    auto range = static_cast<std::uint32_t>(static_cast<std::int64_t>(high) - low + 1);
    std::uint64_t product = (next() >> 32) * range;
    auto fraction = static_cast<std::uint32_t>(product);
    if (fraction < range) {
      std::uint32_t threshold = (0u - range) % range;
      while (fraction < threshold) {
        product = (next() >> 32) * range;
        fraction = static_cast<std::uint32_t>(product);
      }
    }
    return static_cast<std::int32_t>(low + static_cast<std::int64_t>(product >> 32));
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  static std::uint64_t splitmix(std::uint64_t &x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  static std::uint64_t splitmix(std::uint64_t &&x) { return splitmix(x); }

  std::uint64_t state_[4];
};

// Stream ids: one per dimension table, and a range for lineorder chunks.
enum class RngStream : std::uint64_t {
  Customer = 1,
  Supplier = 2,
  Part = 3,
  LineorderChunk0 = std::uint64_t{1} << 40,
};

} // namespace mqx::ssb
