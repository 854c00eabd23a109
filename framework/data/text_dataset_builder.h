#pragma once
// Building an indexed dataset from text files (what hai-data does): every document of every input file, encoded
// with the byte-level tokenizer and followed by the end-of-document token, is one sequence of the dataset.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/text_documents.h"

namespace hai {

struct TextDatasetSummary {
  int64_t files = 0;          // files read
  int64_t skipped_files = 0;  // files left out (strfile companions, symbolic links)
  int64_t documents = 0;
  int64_t tokens = 0;          // end-of-document tokens included
  uint64_t bytes_written = 0;  // .bin and .idx together
};

// Writes prefix.bin and prefix.idx (uint16 tokens). Throws hai::Error for a missing input, an unreadable file, or
// inputs without a single document; then no dataset is written.
TextDatasetSummary build_text_dataset(const std::vector<std::string>& inputs, const std::string& output_prefix,
                                      TextFormat format);

}  // namespace hai
