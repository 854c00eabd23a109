#pragma once
// SampleSource: what a DataLoader draws training samples from. A source holds `window_count()` windows of
// seq_len + 1 tokens (input = the first seq_len, target = the same shifted by one); the DataLoader decides their
// order (shuffle by seed and epoch) and which rank reads which.

#include <cstdint>
#include <span>

namespace hai {

class SampleSource {
 public:
  virtual ~SampleSource() = default;

  virtual int64_t seq_len() const = 0;
  // Windows in one epoch (> 0).
  virtual uint64_t window_count() const = 0;
  // tokens [seq_len + 1] <- window `window` (< window_count()).
  virtual void read_window(uint64_t window, std::span<int32_t> tokens) const = 0;
};

}  // namespace hai
