#pragma once
// The element types a Megatron-LM indexed dataset can store, numbered with Megatron's dtype codes (the byte after
// the version in the .idx header). Token ids are integers: the two floating-point codes are known, so that a file
// using them is named correctly in errors, but they cannot be read as tokens.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hai {

enum class TokenDType : uint8_t { u8 = 1, i8 = 2, i16 = 3, i32 = 4, i64 = 5, f64 = 6, f32 = 7, u16 = 8 };

// The dtype for a code read from a file, or nullopt for a code Megatron does not define.
std::optional<TokenDType> token_dtype_from_code(uint8_t code);
uint8_t token_dtype_code(TokenDType dtype);
size_t token_dtype_size(TokenDType dtype);
// Megatron's (NumPy's) name: "uint8", "int32", "float64"...
std::string_view token_dtype_name(TokenDType dtype);
bool is_integer_token_dtype(TokenDType dtype);

// The smallest dtype the writers use for a vocabulary: uint16 for up to 65536 ids (0..65535), int32 beyond.
TokenDType token_dtype_for_vocab(int64_t vocab_size);

// Whether a token id can be stored in this (integer) dtype.
bool token_fits(int64_t token, TokenDType dtype);

// out[i] <- the i-th token of `bytes`, stored as `dtype`. Throws hai::Error for a token outside the int32 range.
// bytes: [out.size() * token_dtype_size(dtype)], little-endian.
void tokens_to_int32(std::span<const std::byte> bytes, TokenDType dtype, std::span<int32_t> out);

// bytes <- tokens stored as `dtype` (little-endian). Throws hai::Error for a token that does not fit.
// bytes: [tokens.size() * token_dtype_size(dtype)]
void int32_to_tokens(std::span<const int32_t> tokens, TokenDType dtype, std::span<std::byte> bytes);

}  // namespace hai
