#pragma once
// A counter-based RNG (Philox4x32-10, Salmon et al. 2011): the random numbers are a pure function of
// (seed, stream, index), so any rank can produce any slice of a random tensor without shared state, and a run
// re-created from a checkpoint reproduces the same numbers. Streams separate uses (one per parameter, dropout
// site, data shuffle...).

#include <array>
#include <cstdint>

namespace hai {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox4x32-10 bijection.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

  // Four independent 32-bit words for block `block`.
  PhiloxCounter block(uint64_t block) const;
  // The 32-bit word at `index` (index / 4 selects the block).
  uint32_t bits(uint64_t index) const;
  // Uniform in [0, 1) with 24 random bits.
  float uniform(uint64_t index) const;
  // Standard normal (Box-Muller on the words at 2*index and 2*index+1).
  float normal(uint64_t index) const;

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

 private:
  uint64_t seed_;
  uint64_t stream_;
};

}  // namespace hai
