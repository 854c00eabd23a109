#pragma once
// RandomPermutation: a pseudo-random bijection of [0, size) computed index by index, without materialising it, so
// that shuffling a dataset of billions of windows costs no memory and any rank can find any position directly.
// Construction: a 6-round balanced Feistel network on the smallest even number of bits covering `size`, whose
// round function is the counter RNG (Philox) keyed by (seed, stream); values that land outside [0, size) are
// mapped again ("cycle walking") until they land inside, which keeps it a bijection. The result depends only on
// (size, seed, stream), on every platform and standard library.

#include <cstdint>

#include "framework/core/rng.h"

namespace hai {

class RandomPermutation {
 public:
  RandomPermutation(uint64_t size, uint64_t seed, uint64_t stream);

  uint64_t size() const { return size_; }
  // The image of index (index < size; checked).
  uint64_t operator()(uint64_t index) const;

 private:
  uint64_t feistel(uint64_t value) const;

  uint64_t size_;
  CounterRng rng_;
  int half_bits_;
  uint64_t half_mask_;
};

}  // namespace hai
