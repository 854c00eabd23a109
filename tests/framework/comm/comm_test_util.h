#pragma once
// Helpers for the communicator tests: read and write any dtype's elements as doubles, so that one test body
// covers f32, bf16, f16, i32, i64 and u8 with values every dtype holds exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/dtype.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

// The message of the hai::Error `call` throws ("" if none).
template <typename Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const Error& error) {
    return error.message();
  }
  return "";
}

inline void set_value(const Tensor& tensor, int64_t index, double value) {
  switch (tensor.dtype()) {
    case DType::f32: tensor.data<float>()[index] = static_cast<float>(value); return;
    case DType::bf16: tensor.data<bf16>()[index].bits = float_to_bf16(static_cast<float>(value)); return;
    case DType::f16: tensor.data<fp16>()[index].bits = float_to_fp16(static_cast<float>(value)); return;
    case DType::i32: tensor.data<int32_t>()[index] = static_cast<int32_t>(value); return;
    case DType::i64: tensor.data<int64_t>()[index] = static_cast<int64_t>(value); return;
    case DType::u8: tensor.data<uint8_t>()[index] = static_cast<uint8_t>(value); return;
    default: HAI_THROW("set_value: dtype {} not used by the communicator tests", dtype_name(tensor.dtype()));
  }
}

inline double value_at(const Tensor& tensor, int64_t index) {
  switch (tensor.dtype()) {
    case DType::f32: return tensor.data<float>()[index];
    case DType::bf16: return bf16_to_float(tensor.data<bf16>()[index].bits);
    case DType::f16: return fp16_to_float(tensor.data<fp16>()[index].bits);
    case DType::i32: return tensor.data<int32_t>()[index];
    case DType::i64: return static_cast<double>(tensor.data<int64_t>()[index]);
    case DType::u8: return tensor.data<uint8_t>()[index];
    default: HAI_THROW("value_at: dtype {} not used by the communicator tests", dtype_name(tensor.dtype()));
  }
}

// A host tensor whose element i is value(i).
template <typename ValueOf>
OwnedTensor make_tensor(Shape shape, DType dtype, ValueOf value) {
  OwnedTensor tensor(shape, dtype);
  for (int64_t i = 0; i < tensor.numel(); ++i) set_value(tensor, i, value(i));
  return tensor;
}

inline std::vector<double> values_of(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  for (int64_t i = 0; i < tensor.numel(); ++i) values[static_cast<size_t>(i)] = value_at(tensor, i);
  return values;
}

inline constexpr DType kReducibleDtypes[] = {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64};
inline constexpr DType kAllDtypes[] = {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8};

}  // namespace hai::testing
