#pragma once
// TokenizerEncoder: hai-data's DocumentEncoder for a tokenizer.json: invalid UTF-8 in the text is replaced by
// U+FFFD (as Python's errors="replace" and Node's Buffer decoding do), the text is encoded by the Tokenizer
// (added tokens in the text become their ids) and the end-of-document id is appended.

#include <cstdint>
#include <string>

#include "framework/data/text_dataset_builder.h"
#include "framework/text/tokenizer.h"

namespace hai {

class TokenizerEncoder : public DocumentEncoder {
 public:
  TokenizerEncoder(const Tokenizer& tokenizer, int32_t end_of_document_id)
      : tokenizer_(tokenizer), end_of_document_id_(end_of_document_id) {}

  void encode(std::string_view document, std::vector<int32_t>& tokens) override;
  int64_t invalid_utf8_replaced() const override { return replaced_; }

 private:
  const Tokenizer& tokenizer_;
  int32_t end_of_document_id_;
  TokenizerScratch scratch_;
  std::string valid_text_;
  int64_t replaced_ = 0;
};

}  // namespace hai
