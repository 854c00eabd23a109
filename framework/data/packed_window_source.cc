#include "framework/data/packed_window_source.h"

#include <utility>
#include <vector>

#include "framework/core/error.h"

namespace hai {

PackedWindowSource::PackedWindowSource(TokenStream stream, int64_t seq_len)
    : stream_(std::move(stream)), seq_len_(seq_len) {
  HAI_CHECK(seq_len > 0, "seq_len {} must be positive", seq_len);
  int64_t tokens = stream_.token_count();
  if (tokens < seq_len + 1) {
    HAI_THROW("{} tokens in {} documents are too few for one window of seq_len + 1 = {} tokens", tokens,
              stream_.document_count(), seq_len + 1);
  }
  window_count_ = static_cast<uint64_t>((tokens - 1) / seq_len);
}

void PackedWindowSource::read_window(uint64_t window, std::span<int32_t> tokens) const {
  HAI_CHECK(window < window_count_, "window {} of {}", window, window_count_);
  HAI_CHECK(static_cast<int64_t>(tokens.size()) == seq_len_ + 1, "a window of {} tokens, expected seq_len + 1 = {}",
            tokens.size(), seq_len_ + 1);
  stream_.read(static_cast<int64_t>(window) * seq_len_, tokens);
}

std::shared_ptr<PackedWindowSource> make_packed_window_source(std::shared_ptr<const IndexedDataset> dataset,
                                                              DataSplit split, double valid_fraction,
                                                              int64_t seq_len) {
  std::vector<int64_t> documents = documents_of_split(*dataset, split, valid_fraction);
  return std::make_shared<PackedWindowSource>(TokenStream(std::move(dataset), documents), seq_len);
}

}  // namespace hai
