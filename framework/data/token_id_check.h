#pragma once
// The check that every token id of an indexed dataset is a valid row of the embedding: 0 <= id < vocab_size. One
// pass over the mapped .bin, split over threads (skipped where the dtype cannot hold an id outside the range), so a
// bad id is found when a dataset is opened, not when its window comes up hours into a run.

#include <cstdint>
#include <optional>

#include "framework/data/indexed_dataset.h"

namespace hai {

struct BadTokenId {
  TokenLocation location;
  int64_t id = 0;
};

// The first token (in file order) outside [0, vocab_size), if any. threads: 0 = the hardware's.
std::optional<BadTokenId> find_bad_token_id(const IndexedDataset& dataset, int64_t vocab_size, int threads = 0);

// Throws hai::Error naming the .bin file, the document, the token offset and the id of the first bad id.
void check_token_ids(const IndexedDataset& dataset, int64_t vocab_size, int threads = 0);

}  // namespace hai
