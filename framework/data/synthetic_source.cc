#include "framework/data/synthetic_source.h"

#include <limits>

#include "framework/core/error.h"

namespace hai {
namespace {

// NOTE: a stream of its own, so synthetic tokens never coincide with other random numbers drawn from the seed.
constexpr uint64_t kSyntheticStream = 0x5359'4E54'0000'0000;  // "SYNT"

}  // namespace

SyntheticSource::SyntheticSource(int64_t vocab_size, int64_t seq_len, uint64_t seed, uint64_t window_count)
    : vocab_size_(vocab_size), seq_len_(seq_len), window_count_(window_count), rng_(seed, kSyntheticStream) {
  HAI_CHECK(vocab_size > 0 && vocab_size <= std::numeric_limits<int32_t>::max(), "vocab_size {} out of range",
            vocab_size);
  HAI_CHECK(seq_len > 0, "seq_len {} must be positive", seq_len);
  HAI_CHECK(window_count > 0 && window_count <= std::numeric_limits<uint64_t>::max() / (seq_len + 1),
            "window_count {} out of range", window_count);
}

void SyntheticSource::read_window(uint64_t window, std::span<int32_t> tokens) const {
  HAI_CHECK(window < window_count_, "window {} of {}", window, window_count_);
  HAI_CHECK(static_cast<int64_t>(tokens.size()) == seq_len_ + 1, "a window of {} tokens, expected seq_len + 1 = {}",
            tokens.size(), seq_len_ + 1);
  uint64_t first = window * static_cast<uint64_t>(seq_len_ + 1);
  for (size_t j = 0; j < tokens.size(); ++j) {
    // Multiply-shift maps 32 random bits onto [0, vocab_size).
    uint64_t bits = rng_.bits(first + j);
    tokens[j] = static_cast<int32_t>((bits * static_cast<uint64_t>(vocab_size_)) >> 32);
  }
}

}  // namespace hai
