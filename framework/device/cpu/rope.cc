#include "framework/device/cpu/ops.h"

#include <algorithm>

namespace hai::cpu {
namespace {

// Rotates the pairs of columns [column_offset, column_offset + R) of every head vector by sin_sign * angle.
void rotate_pairs(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset, float sin_sign) {
  const float* input = x.data<float>();                 // [T, ..., W]
  const int32_t* position = positions.data<int32_t>();  // [T]
  const float* cos = table.cos.data<float>();           // [P, R/2]
  const float* sin = table.sin.data<float>();           // [P, R/2]
  float* output = out.data<float>();                    // [T, ..., W]
  int64_t tokens = x.size(0);
  int64_t width = x.size(-1);
  int64_t heads = tokens > 0 && width > 0 ? x.numel() / (tokens * width) : 0;
  int64_t pairs = table.cos.size(1);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* cos_row = cos + position[t] * pairs;
    const float* sin_row = sin + position[t] * pairs;
    for (int64_t h = 0; h < heads; ++h) {
      int64_t begin = (t * heads + h) * width + column_offset;
      for (int64_t i = 0; i < pairs; ++i) {
        float real = input[begin + 2 * i];
        float imaginary = input[begin + 2 * i + 1];
        float s = sin_sign * sin_row[i];
        output[begin + 2 * i] = real * cos_row[i] - imaginary * s;
        output[begin + 2 * i + 1] = real * s + imaginary * cos_row[i];
      }
    }
  }
}

// A bf16 out: x rotated into an fp32 copy, then every column rounded once.
void rotate_into(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                 int64_t column_offset, float sin_sign) {
  if (out.dtype() == DType::f32) return rotate_pairs(out, x, positions, table, column_offset, sin_sign);
  OwnedTensor rotated(x.shape(), DType::f32);
  std::copy_n(x.data<float>(), x.numel(), rotated.data<float>());
  rotate_pairs(rotated, rotated, positions, table, column_offset, sin_sign);
  bf16* narrow = out.data<bf16>();
  for (int64_t i = 0; i < x.numel(); ++i) narrow[i].bits = float_to_bf16(rotated.data<float>()[i]);
}

}  // namespace

void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset) {
  rotate_into(out, x, positions, table, column_offset, 1.0f);
}

void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset) {
  rotate_into(d_x, d_out, positions, table, column_offset, -1.0f);
}

}  // namespace hai::cpu
