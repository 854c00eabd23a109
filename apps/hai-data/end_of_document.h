#pragma once
// Which token of a tokenizer.json ends each document in hai-data's output, in this order:
//   1. --eod-token TEXT, when given (it must be one of the tokenizer's added tokens);
//   2. "eos_token" of the tokenizer_config.json beside the tokenizer.json, when there is one (Megatron uses the
//      EOS token as its end-of-document token);
//   3. the first of "<|endoftext|>" (GPT-2, Qwen), "<|end_of_text|>" (Llama-3), "<｜end▁of▁sentence｜>"
//      (DeepSeek-V3), "</s>", "<eos>" that is an added token.
// Otherwise a hai::Error asks for --eod-token.

#include <cstdint>
#include <filesystem>
#include <string>

#include "framework/text/tokenizer.h"

namespace hai {

struct EndOfDocumentToken {
  std::string text;
  int32_t id = 0;
  std::string chosen_by;  // "--eod-token", "tokenizer_config.json" or "a well-known name"
};

EndOfDocumentToken choose_end_of_document_token(const Tokenizer& tokenizer, const std::filesystem::path& tokenizer_json,
                                                const std::string& eod_option);

}  // namespace hai
