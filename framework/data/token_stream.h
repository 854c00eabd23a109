#pragma once
// TokenStream: chosen documents of an indexed dataset, concatenated in order into one stream of tokens (each
// document already ends with its end-of-document token: hai-data writes it). Position p of the stream is found by
// a binary search over the cumulative sequence lengths.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "framework/data/indexed_dataset.h"

namespace hai {

class TokenStream {
 public:
  // documents: ascending or not, each once; the stream follows their order.
  TokenStream(std::shared_ptr<const IndexedDataset> dataset, const std::vector<int64_t>& documents);

  int64_t token_count() const { return sequence_starts_.back(); }
  int64_t document_count() const { return document_count_; }
  // tokens <- stream tokens [begin, begin + tokens.size()) (checked).
  void read(int64_t begin, std::span<int32_t> tokens) const;

 private:
  std::shared_ptr<const IndexedDataset> dataset_;
  std::vector<int64_t> sequences_;        // dataset sequence ids in stream order
  std::vector<int64_t> sequence_starts_;  // [sequences_ + 1]: stream offset of each, then the total
  int64_t document_count_;
};

}  // namespace hai
