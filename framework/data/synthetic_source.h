#pragma once
// SyntheticSource (data.source: synthetic): uniformly random tokens from the counter RNG, for benchmarks that must
// not depend on a dataset. Token j of window w is a pure function of (seed, w, j).

#include <cstdint>

#include "framework/core/rng.h"
#include "framework/data/sample_source.h"

namespace hai {

class SyntheticSource : public SampleSource {
 public:
  // window_count: windows per epoch (the default gives practically endless epochs).
  SyntheticSource(int64_t vocab_size, int64_t seq_len, uint64_t seed, uint64_t window_count = uint64_t{1} << 40);

  int64_t seq_len() const override { return seq_len_; }
  uint64_t window_count() const override { return window_count_; }
  void read_window(uint64_t window, std::span<int32_t> tokens) const override;

 private:
  int64_t vocab_size_;
  int64_t seq_len_;
  uint64_t window_count_;
  CounterRng rng_;
};

}  // namespace hai
