#pragma once
// Small indexed datasets for the fault suite: documents of chosen token ids.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/indexed_dataset_writer.h"

namespace hai::testing {

// Writes prefix.bin/.idx: `documents` documents of `length` tokens each, token j of document d being
// (d * 31 + j) % vocab_size; `bad_id` (if >= 0) replaces token `bad_token` of document `bad_document`.
inline void write_token_dataset(const std::string& prefix, int documents, int length, int vocab_size,
                                int bad_document = -1, int bad_token = 0, int32_t bad_id = -1) {
  IndexedDatasetWriter writer(prefix, TokenDType::i32);
  for (int document = 0; document < documents; ++document) {
    std::vector<int32_t> tokens(static_cast<size_t>(length));
    for (int j = 0; j < length; ++j) tokens[static_cast<size_t>(j)] = (document * 31 + j) % vocab_size;
    if (document == bad_document) tokens[static_cast<size_t>(bad_token)] = bad_id;
    writer.add_document(tokens);
  }
  writer.finalize();
}

}  // namespace hai::testing
