#include "framework/checkpoint/safetensors_dtype.h"

#include <array>
#include <utility>

#include "framework/core/error.h"

namespace hai {
namespace {

constexpr std::array<std::pair<DType, std::string_view>, 8> kNames = {{
    {DType::f32, "F32"},
    {DType::bf16, "BF16"},
    {DType::f16, "F16"},
    {DType::e4m3, "F8_E4M3"},
    {DType::i32, "I32"},
    {DType::i64, "I64"},
    {DType::u8, "U8"},
    {DType::u16, "U16"},
}};

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& [known, name] : kNames) {
    if (known == dtype) return name;
  }
  HAI_THROW("dtype {} has no safetensors name", dtype_name(dtype));
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& [dtype, known] : kNames) {
    if (known == name) return dtype;
  }
  return std::nullopt;
}

}  // namespace hai
