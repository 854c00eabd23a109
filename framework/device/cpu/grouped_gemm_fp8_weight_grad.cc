
#include <cstring>

#include "framework/device/cast.h"
#include "framework/device/cpu/ops.h"
#include "framework/device/fp8_quantize.h"

namespace hai::cpu {
namespace {

int64_t round_up_to_tile(int64_t rows) { return (rows + kFp8TileSize - 1) / kFp8TileSize * kFp8TileSize; }

// x_p [P, C] fp32: x's routed rows moved to their token-padded positions, zeros elsewhere.
OwnedTensor token_padded_rows(const Tensor& x, const int32_t* offsets, const int32_t* padded, int64_t experts,
                              int64_t padded_rows) {
  const int64_t columns = x.size(1);
  OwnedTensor widened(x.shape(), DType::f32);  // [R, C], exact
  hai::cast_tensor(widened, x);
  OwnedTensor rows(Shape{padded_rows, columns}, DType::f32);  // [P, C]
  std::memset(rows.tensor().raw(), 0, rows.tensor().bytes());
  for (int64_t e = 0; e < experts; ++e) {
    int64_t count = offsets[e + 1] - offsets[e];
    if (count == 0) continue;
    std::memcpy(rows.tensor().data<float>() + padded[e] * columns,
                widened.tensor().data<float>() + offsets[e] * columns,
                static_cast<size_t>(count * columns) * sizeof(float));
  }
  return rows;
}

// [P, C] fp32 <- tokens: every value times the scale of its 128-token block and column, token-major again (the
// layout the scales already have: 128x1 tiles of [P, C]).
OwnedTensor dequantized(const Fp8ExpertTokens& tokens) {
  const int64_t columns = tokens.values.size(0), padded_rows = tokens.values.size(1);
  OwnedTensor bytes(Shape{padded_rows, columns}, DType::e4m3);  // [P, C]
  const e4m3* transposed = tokens.values.data<e4m3>();          // [C, P]
  for (int64_t p = 0; p < padded_rows; ++p) {
    for (int64_t c = 0; c < columns; ++c)
      bytes.tensor().data<e4m3>()[p * columns + c] = transposed[c * padded_rows + p];
  }
  OwnedTensor values(Shape{padded_rows, columns}, DType::f32);  // [P, C]
  dequantize_tiles(values, bytes, tokens.scales, {kFp8TileSize, 1});
  return values;
}

}  // namespace

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets) {
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  int32_t* padded_offsets = padded.data<int32_t>();         // [E + 1]
  padded_offsets[0] = 0;
  for (int64_t e = 0; e + 1 < expert_offsets.numel(); ++e) {
    padded_offsets[e + 1] = padded_offsets[e] + static_cast<int32_t>(round_up_to_tile(offsets[e + 1] - offsets[e]));
  }
}

void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales) {
  const int64_t experts = expert_offsets.numel() - 1, padded_rows = tokens.values.size(1);
  check_offsets_values(expert_offsets, x.size(0));
  const int32_t* padded_offsets = padded.data<int32_t>();  // [E + 1]
  HAI_CHECK(padded_offsets[experts] <= padded_rows, "quantize_expert_tokens: the experts' {} padded rows exceed P {}",
            padded_offsets[experts], padded_rows);
  OwnedTensor rows = token_padded_rows(x, expert_offsets.data<int32_t>(), padded_offsets, experts, padded_rows);
  OwnedTensor scales_t(Shape{tokens.scales.size(1), tokens.scales.size(0)}, DType::f32);  // [C, P / 128]
  quantize_tiles(tokens.values, scales_t, rows, {kFp8TileSize, 1}, pow2_scales, /*transposed=*/true);
  const float* transposed_scales = scales_t.tensor().data<float>();
  float* scales = tokens.scales.data<float>();  // [P / 128, C]
  const int64_t blocks = tokens.scales.size(0), columns = tokens.scales.size(1);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t c = 0; c < columns; ++c) scales[b * columns + c] = transposed_scales[c * blocks + b];
  }
}

// NOTE: the dequantised operands are allocated per call (this is the CPU reference).
void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta) {
  const int32_t* padded_offsets = padded.data<int32_t>();  // [E + 1]
  OwnedTensor d_y_values = dequantized(d_y);               // [P, N]
  OwnedTensor x_values = dequantized(x);                   // [P, K]
  GemmOptions options{.transpose_a = true, .beta = beta};
  for (int64_t e = 0; e < grad.experts; ++e) {
    Tensor expert_grad = grad.expert(e);  // [N, K]
    if (padded_offsets[e] == padded_offsets[e + 1]) {
      if (beta == 0.0f) std::memset(expert_grad.raw(), 0, expert_grad.bytes());
      continue;
    }
    // [N, K] (+)= [tokens of e, N]^T @ [tokens of e, K]
    cpu::gemm(expert_grad, d_y_values.tensor().slice(padded_offsets[e], padded_offsets[e + 1]),
              x_values.tensor().slice(padded_offsets[e], padded_offsets[e + 1]), options);
  }
}

}  // namespace hai::cpu
