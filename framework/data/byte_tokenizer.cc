#include "framework/data/byte_tokenizer.h"

#include "framework/core/error.h"

namespace hai {

std::vector<int32_t> byte_encode(std::string_view text) {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size());
  for (char byte : text) tokens.push_back(static_cast<unsigned char>(byte));
  return tokens;
}

void byte_encode_document(std::string_view text, std::vector<int32_t>& tokens) {
  tokens.reserve(tokens.size() + text.size() + 1);
  for (char byte : text) tokens.push_back(static_cast<unsigned char>(byte));
  tokens.push_back(kEndOfDocument);
}

std::string byte_decode(std::span<const int32_t> tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (int32_t token : tokens) {
    if (token == kEndOfDocument) continue;
    if (token < 0 || token > 255) HAI_THROW("token {} is not a byte-level token (0..256)", token);
    text.push_back(static_cast<char>(static_cast<unsigned char>(token)));
  }
  return text;
}

}  // namespace hai
