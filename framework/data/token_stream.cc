#include "framework/data/token_stream.h"

#include <algorithm>
#include <utility>

#include "framework/core/error.h"
#include "framework/data/indexed_format.h"

namespace hai {

TokenStream::TokenStream(std::shared_ptr<const IndexedDataset> dataset, const std::vector<int64_t>& documents)
    : dataset_(std::move(dataset)), sequence_starts_{0}, document_count_(static_cast<int64_t>(documents.size())) {
  HAI_CHECK(dataset_ != nullptr, "a token stream needs a dataset");
  for (int64_t document : documents) {
    for (int64_t sequence = dataset_->document_begin(document); sequence < dataset_->document_end(document);
         ++sequence) {
      int64_t length = dataset_->sequence_length(sequence);
      if (length == 0) continue;
      sequences_.push_back(sequence);
      sequence_starts_.push_back(sequence_starts_.back() + length);
    }
  }
}

void TokenStream::read(int64_t begin, std::span<int32_t> tokens) const {
  int64_t count = static_cast<int64_t>(tokens.size());
  HAI_CHECK(begin >= 0 && count <= token_count() - begin, "tokens [{}, {}) of a stream of {}", begin,
            begin + count, token_count());
  // The last sequence starting at or before `begin`.
  size_t index = static_cast<size_t>(
      std::upper_bound(sequence_starts_.begin(), sequence_starts_.end(), begin) - sequence_starts_.begin() - 1);
  while (!tokens.empty()) {
    int64_t offset = begin - sequence_starts_[index];
    int64_t available = sequence_starts_[index + 1] - begin;
    size_t take = static_cast<size_t>(std::min<int64_t>(available, static_cast<int64_t>(tokens.size())));
    try {
      dataset_->check_data_not_shrunk();  // NOTE: one fstat: a read past a truncated mapping would be SIGBUS
      dataset_->sequence(sequences_[index]).copy_to(offset, tokens.first(take));
    } catch (const Error& error) {
      TokenLocation where = dataset_->locate(sequences_[index], offset);
      HAI_THROW("{}: document {}, token {}: {}", data_path(dataset_->prefix()), where.document, where.offset,
                error.message());
    }
    tokens = tokens.subspan(take);
    begin += static_cast<int64_t>(take);
    ++index;
  }
}

}  // namespace hai
