#include "framework/data/token_dtype.h"

#include <bit>
#include <cstring>
#include <limits>

#include "framework/core/error.h"

namespace hai {
namespace {

static_assert(std::endian::native == std::endian::little, "the indexed dataset format is little-endian");

// Calls visit(T{}) with the C++ type that stores `dtype`.
template <typename Visitor>
decltype(auto) visit_token_type(TokenDType dtype, Visitor&& visit) {
  switch (dtype) {
    case TokenDType::u8: return visit(uint8_t{});
    case TokenDType::i8: return visit(int8_t{});
    case TokenDType::i16: return visit(int16_t{});
    case TokenDType::i32: return visit(int32_t{});
    case TokenDType::i64: return visit(int64_t{});
    case TokenDType::u16: return visit(uint16_t{});
    case TokenDType::f64:
    case TokenDType::f32: break;
  }
  HAI_THROW("token dtype {} is not an integer type", token_dtype_name(dtype));
}

}  // namespace

std::optional<TokenDType> token_dtype_from_code(uint8_t code) {
  if (code < 1 || code > 8) return std::nullopt;
  return static_cast<TokenDType>(code);
}

uint8_t token_dtype_code(TokenDType dtype) { return static_cast<uint8_t>(dtype); }

size_t token_dtype_size(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::u8:
    case TokenDType::i8: return 1;
    case TokenDType::i16:
    case TokenDType::u16: return 2;
    case TokenDType::i32:
    case TokenDType::f32: return 4;
    case TokenDType::i64:
    case TokenDType::f64: return 8;
  }
  HAI_THROW("invalid token dtype {}", static_cast<int>(dtype));
}

std::string_view token_dtype_name(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::u8: return "uint8";
    case TokenDType::i8: return "int8";
    case TokenDType::i16: return "int16";
    case TokenDType::i32: return "int32";
    case TokenDType::i64: return "int64";
    case TokenDType::f64: return "float64";
    case TokenDType::f32: return "float32";
    case TokenDType::u16: return "uint16";
  }
  return "invalid";
}

bool is_integer_token_dtype(TokenDType dtype) { return dtype != TokenDType::f32 && dtype != TokenDType::f64; }

TokenDType token_dtype_for_vocab(int64_t vocab_size) {
  HAI_CHECK(vocab_size > 0, "vocabulary size {} must be positive", vocab_size);
  return vocab_size <= 65536 ? TokenDType::u16 : TokenDType::i32;
}

bool token_fits(int64_t token, TokenDType dtype) {
  return visit_token_type(dtype, [token]<typename T>(T) {
    return token >= std::numeric_limits<T>::min() && token <= std::numeric_limits<T>::max();
  });
}

void tokens_to_int32(std::span<const std::byte> bytes, TokenDType dtype, std::span<int32_t> out) {
  visit_token_type(dtype, [&]<typename T>(T) {
    HAI_CHECK(bytes.size() == out.size() * sizeof(T), "{} bytes cannot hold {} {} tokens", bytes.size(),
              out.size(), token_dtype_name(dtype));
    for (size_t i = 0; i < out.size(); ++i) {
      T token;
      std::memcpy(&token, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (sizeof(T) > sizeof(int32_t)) {
        if (token < std::numeric_limits<int32_t>::min() || token > std::numeric_limits<int32_t>::max()) {
          HAI_THROW("token id {} does not fit in int32", token);
        }
      }
      out[i] = static_cast<int32_t>(token);
    }
  });
}

void int32_to_tokens(std::span<const int32_t> tokens, TokenDType dtype, std::span<std::byte> bytes) {
  visit_token_type(dtype, [&]<typename T>(T) {
    HAI_CHECK(bytes.size() == tokens.size() * sizeof(T), "{} bytes cannot hold {} {} tokens", bytes.size(),
              tokens.size(), token_dtype_name(dtype));
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (!token_fits(tokens[i], dtype)) {
        HAI_THROW("token id {} does not fit in {}", tokens[i], token_dtype_name(dtype));
      }
      T token = static_cast<T>(tokens[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &token, sizeof(T));
    }
  });
}

}  // namespace hai
