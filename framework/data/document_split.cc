#include "framework/data/document_split.h"

#include "framework/core/error.h"
#include "framework/core/rng.h"
#include "framework/data/indexed_dataset.h"

namespace hai {
namespace {

// NOTE: fixed on purpose: the split must not depend on the training seed.
constexpr uint64_t kSplitSeed = 0x5350'4C49'5400'0000;  // "SPLIT"
constexpr uint64_t kSplitStream = 0;

}  // namespace

bool is_validation_document(int64_t document, double valid_fraction) {
  // 53 random bits make a double in [0, 1) exactly.
  PhiloxCounter words = CounterRng(kSplitSeed, kSplitStream).block(static_cast<uint64_t>(document));
  uint64_t bits = ((static_cast<uint64_t>(words[0]) << 32) | words[1]) >> 11;
  double hash = static_cast<double>(bits) * 0x1p-53;
  return hash < valid_fraction;
}

std::vector<int64_t> documents_of_split(const IndexedDataset& dataset, DataSplit split, double valid_fraction) {
  HAI_CHECK(valid_fraction >= 0.0 && valid_fraction <= 1.0, "valid_fraction {} is not in [0, 1]", valid_fraction);
  std::vector<int64_t> documents;
  for (int64_t document = 0; document < dataset.document_count(); ++document) {
    if (is_validation_document(document, valid_fraction) == (split == DataSplit::valid)) {
      documents.push_back(document);
    }
  }
  return documents;
}

}  // namespace hai
