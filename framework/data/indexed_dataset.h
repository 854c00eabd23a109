#pragma once
// IndexedDataset: reads a Megatron-LM indexed dataset (prefix.bin + prefix.idx) through mmap. The constructor
// validates the whole index against both file sizes, so every later access is in bounds: a corrupt or truncated
// file is a hai::Error naming the file and the problem, never a crash.

#include <cstdint>
#include <span>
#include <string>

#include "framework/data/mapped_file.h"
#include "framework/data/token_dtype.h"

namespace hai {

// The tokens of one sequence, in the dataset's dtype, still in the mapped file.
class TokenSpan {
 public:
  TokenSpan(std::span<const std::byte> bytes, TokenDType dtype) : bytes_(bytes), dtype_(dtype) {}

  int64_t size() const { return static_cast<int64_t>(bytes_.size() / token_dtype_size(dtype_)); }
  TokenDType dtype() const { return dtype_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  // The token at `index` (checked).
  int64_t operator[](int64_t index) const;
  // tokens[i] <- tokens [begin, begin + tokens.size()) of this span (checked).
  void copy_to(int64_t begin, std::span<int32_t> tokens) const;

 private:
  std::span<const std::byte> bytes_;
  TokenDType dtype_;
};

// Where a token lies: its document and sequence, and its offset in tokens from the start of the document.
struct TokenLocation {
  int64_t document = 0;
  int64_t sequence = 0;
  int64_t offset = 0;
};

class IndexedDataset {
 public:
  // Opens prefix.idx and prefix.bin. Throws hai::Error naming the file and what is wrong.
  explicit IndexedDataset(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  TokenDType dtype() const { return dtype_; }
  int64_t sequence_count() const { return sequence_count_; }
  int64_t document_count() const { return document_index_entries_ - 1; }
  int64_t total_tokens() const { return total_tokens_; }

  int64_t sequence_length(int64_t sequence) const;
  TokenSpan sequence(int64_t sequence) const;
  // Document d is the sequences [document_begin(d), document_end(d)).
  int64_t document_begin(int64_t document) const;
  int64_t document_end(int64_t document) const { return document_begin(document + 1); }
  // The location of token `index` of sequence `sequence`.
  TokenLocation locate(int64_t sequence, int64_t index) const;
  // Throws hai::Error naming the .bin file when it shrank since it was opened (MappedFile::check_not_shrunk).
  void check_data_not_shrunk() const { data_file_.check_not_shrunk(); }

 private:
  void read_header();
  void validate_sequences();
  void validate_document_index() const;
  int64_t sequence_pointer(int64_t sequence) const;
  int64_t document_index_entry(int64_t entry) const;

  std::string prefix_;
  MappedFile index_file_;
  MappedFile data_file_;
  TokenDType dtype_ = TokenDType::u16;
  int64_t sequence_count_ = 0;
  int64_t document_index_entries_ = 0;
  int64_t total_tokens_ = 0;
};

}  // namespace hai
