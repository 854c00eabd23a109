#pragma once
// The byte-level tokenizer: each byte of UTF-8 (or any) text is one token, its value 0..255; token 256 marks the
// end of a document. Vocabulary: 257 ids.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hai {

inline constexpr int32_t kByteVocabSize = 257;
inline constexpr int32_t kEndOfDocument = 256;

// tokens [text.size()] <- the bytes of text (no end-of-document).
std::vector<int32_t> byte_encode(std::string_view text);

// Appends the bytes of text, then kEndOfDocument, to tokens.
void byte_encode_document(std::string_view text, std::vector<int32_t>& tokens);

// The text of tokens. End-of-document tokens mark boundaries and produce no text; any id outside 0..256 is a
// hai::Error.
std::string byte_decode(std::span<const int32_t> tokens);

}  // namespace hai
