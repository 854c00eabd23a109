#include "apps/hai-data/tokenizer_encoder.h"

#include "framework/text/utf8.h"

namespace hai {

void TokenizerEncoder::encode(std::string_view document, std::vector<int32_t>& tokens) {
  if (valid_utf8_prefix(document) == document.size()) {
    tokenizer_.encode(document, tokens, scratch_);
  } else {
    replaced_ += static_cast<int64_t>(replace_invalid_utf8(document, valid_text_));
    tokenizer_.encode(valid_text_, tokens, scratch_);
  }
  tokens.push_back(end_of_document_id_);
}

}  // namespace hai
