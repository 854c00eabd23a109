#pragma once
// PackedWindowSource (data.source: indexed): windows over a TokenStream. Window i is stream tokens
// [i * seq_len, i * seq_len + seq_len + 1): consecutive windows share one token (the target of the last position
// of window i is the first input of window i + 1), so every token of the stream is predicted exactly once per
// epoch and none is skipped. A stream of N tokens gives (N - 1) / seq_len windows; the tail that does not fill a
// window is left out of that epoch. Windows cross document boundaries: documents are packed, separated by their
// end-of-document tokens.

#include <cstdint>
#include <memory>

#include "framework/data/document_split.h"
#include "framework/data/sample_source.h"
#include "framework/data/token_stream.h"

namespace hai {

class PackedWindowSource : public SampleSource {
 public:
  // Throws hai::Error if the stream is too short for one window.
  PackedWindowSource(TokenStream stream, int64_t seq_len);

  int64_t seq_len() const override { return seq_len_; }
  uint64_t window_count() const override { return window_count_; }
  void read_window(uint64_t window, std::span<int32_t> tokens) const override;

  const TokenStream& stream() const { return stream_; }

 private:
  TokenStream stream_;
  int64_t seq_len_;
  uint64_t window_count_;
};

// The windows of one split (document_split.h) of a dataset.
std::shared_ptr<PackedWindowSource> make_packed_window_source(std::shared_ptr<const IndexedDataset> dataset,
                                                              DataSplit split, double valid_fraction,
                                                              int64_t seq_len);

}  // namespace hai
