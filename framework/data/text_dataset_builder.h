#pragma once
// Building an indexed dataset from text files (what hai-data does): every document of every input file (see
// text_documents.h), encoded by a DocumentEncoder (which ends it with the end-of-document token), is one sequence
// of the dataset. Documents are encoded on several threads; the dataset is the same for any thread count.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/text_documents.h"

namespace hai {

// Turns one document's text into token ids, the end-of-document token last. Each thread has its own.
class DocumentEncoder {
 public:
  virtual ~DocumentEncoder() = default;
  // Appends the ids of the document to tokens.
  virtual void encode(std::string_view document, std::vector<int32_t>& tokens) = 0;
  // Invalid UTF-8 sequences replaced by U+FFFD so far (0 for encoders that take any bytes).
  virtual int64_t invalid_utf8_replaced() const { return 0; }
};

// The byte-level encoder: each byte is a token (0..255), then kEndOfDocument (byte_tokenizer.h).
class ByteDocumentEncoder : public DocumentEncoder {
 public:
  void encode(std::string_view document, std::vector<int32_t>& tokens) override;
};

struct TextDatasetProgress {
  int64_t input_bytes = 0;  // all input files together
  int64_t bytes_done = 0;   // of them, read and encoded
  int64_t documents = 0;    // written
  int64_t tokens = 0;       // written
};

struct TextDatasetOptions {
  TextFormat format = TextFormat::fortune;
  std::string json_key = "text";  // jsonl: the field holding the document
  int threads = 1;
  int64_t vocab_size = 257;  // picks the token dtype (token_dtype_for_vocab)
  std::function<std::unique_ptr<DocumentEncoder>()> make_encoder = [] {
    return std::make_unique<ByteDocumentEncoder>();
  };
  // Called on the calling thread about every `progress_interval_s` while encoding, and once at the end.
  std::function<void(const TextDatasetProgress&)> on_progress;
  double progress_interval_s = 0.5;
};

struct TextDatasetSummary {
  int64_t files = 0;          // files read
  int64_t skipped_files = 0;  // files left out (strfile companions, symbolic links)
  int64_t documents = 0;
  int64_t empty_documents = 0;  // jsonl documents whose text is "", left out
  int64_t tokens = 0;           // end-of-document tokens included
  int64_t text_bytes = 0;       // bytes of document text (for jsonl: of the text fields)
  int64_t invalid_utf8_replaced = 0;
  uint64_t bytes_written = 0;  // .bin and .idx together
};

// Writes prefix.bin and prefix.idx. Throws hai::Error for a missing input, an unreadable file, a jsonl line that is
// not a JSON object with a string `json_key` (naming file:line), or inputs without a single document; then no
// dataset is written.
TextDatasetSummary build_text_dataset(const std::vector<std::string>& inputs, const std::string& output_prefix,
                                      const TextDatasetOptions& options);

}  // namespace hai
