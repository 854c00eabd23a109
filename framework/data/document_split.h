#pragma once
// The train/validation split of a dataset's documents. Document d goes to validation when a hash of its index
// (the counter RNG under a fixed key, independent of the training seed) is below valid_fraction, so
//   - the split never changes with the seed, the world size or the parallel layout,
//   - validation documents are spread over the whole corpus (not its last, often different, part: a corpus made
//     by concatenating files would otherwise validate on the last files only),
//   - raising valid_fraction only moves documents from train to validation, never back.
// The validation share is valid_fraction in expectation, not exactly.

#include <cstdint>
#include <vector>

namespace hai {

class IndexedDataset;

enum class DataSplit { train, valid };

bool is_validation_document(int64_t document, double valid_fraction);

// The documents of `split`, ascending. valid_fraction in [0, 1] (checked).
std::vector<int64_t> documents_of_split(const IndexedDataset& dataset, DataSplit split, double valid_fraction);

}  // namespace hai
