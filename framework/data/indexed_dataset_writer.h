#pragma once
// IndexedDatasetWriter: writes a Megatron-LM indexed dataset (prefix.bin + prefix.idx), one sequence per document,
// as Megatron's preprocessing does. Both files are written as temporaries (prefix.bin.tmp, prefix.idx.tmp) and
// renamed into place by finalize(), .bin first, then .idx: a crash or an exception before finalize() leaves no
// new dataset (a writer destroyed unfinalised deletes its temporaries).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "framework/data/atomic_file_writer.h"
#include "framework/data/token_dtype.h"

namespace hai {

class IndexedDatasetWriter {
 public:
  // dtype: an integer TokenDType (token_dtype_for_vocab picks one). The directory of `prefix` is created if needed.
  IndexedDatasetWriter(const std::string& prefix, TokenDType dtype);

  // Appends one document of tokens [N] (N may be 0). Throws hai::Error if a token does not fit the dtype.
  void add_document(std::span<const int32_t> tokens);
  // Writes the index and publishes both files. No more documents after it.
  void finalize();

  int64_t document_count() const { return static_cast<int64_t>(sequence_lengths_.size()); }
  int64_t token_count() const { return token_count_; }
  // Bytes written to .bin and .idx together.
  uint64_t bytes_written() const { return data_file_.bytes_written() + index_file_.bytes_written(); }

 private:
  void write_index();

  TokenDType dtype_;
  AtomicFileWriter data_file_;
  AtomicFileWriter index_file_;
  std::vector<int32_t> sequence_lengths_;
  std::vector<std::byte> encoded_;  // scratch: one document in the dataset's dtype
  int64_t token_count_ = 0;
  bool finalized_ = false;
};

}  // namespace hai
