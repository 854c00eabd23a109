#include "framework/data/random_permutation.h"

#include <bit>

#include "framework/core/error.h"

namespace hai {
namespace {

constexpr int kFeistelRounds = 6;

}  // namespace

RandomPermutation::RandomPermutation(uint64_t size, uint64_t seed, uint64_t stream)
    : size_(size), rng_(seed, stream) {
  HAI_CHECK(size > 0, "a permutation of nothing");
  int bits = std::bit_width(size - 1);
  half_bits_ = bits <= 2 ? 1 : (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t RandomPermutation::operator()(uint64_t index) const {
  HAI_CHECK(index < size_, "index {} of a permutation of {}", index, size_);
  uint64_t value = feistel(index);
  while (value >= size_) value = feistel(value);
  return value;
}

uint64_t RandomPermutation::feistel(uint64_t value) const {
  uint64_t left = value >> half_bits_;
  uint64_t right = value & half_mask_;
  for (uint64_t round = 0; round < kFeistelRounds; ++round) {
    // NOTE: right < 2^32 (half_bits_ <= 32), so (round, right) is a unique 64-bit block number.
    uint64_t mixed = rng_.block((round << 32) | right)[0] & half_mask_;
    uint64_t next_right = left ^ mixed;
    left = right;
    right = next_right;
  }
  return (left << half_bits_) | right;
}

}  // namespace hai
