#pragma once
// Where SwiGLU's operands sit in memory: `rows` rows of `width` elements. out and d_out are [rows, width]; gate and up
// (and d_gate and d_up) are rows input_stride (gradient_stride) elements apart: width for separate [N, F] tensors,
// 2F for the two halves of one [N, 2F] tensor (the routed experts' gate_proj and up_proj written by one GEMM).

#include <cstdint>

namespace hai {

struct SwigluRows {
  int64_t rows = 0;
  int64_t width = 0;
  int64_t input_stride = 0;
  int64_t gradient_stride = 0;
};

}  // namespace hai
