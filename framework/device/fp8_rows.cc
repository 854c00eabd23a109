#include "framework/device/fp8_rows.h"

#include "framework/device/fp8_quantize.h"

namespace hai {

Fp8Rows::Fp8Rows(int64_t rows, int64_t columns, Device device)
    : values(Shape{rows, columns}, DType::e4m3, device),
      scales(Shape{rows, (columns + kFp8TileSize - 1) / kFp8TileSize}, DType::f32, device) {}

Fp8Rows quantize_rows(const Tensor& rows, bool pow2_scales, Stream stream) {
  HAI_CHECK(rows.rank() == 2, "fp8 rows: {} must be a matrix", rows.str());
  Fp8Rows fp8(rows.size(0), rows.size(1), rows.device());
  quantize_1x128(fp8.values, fp8.scales, rows, pow2_scales, stream);
  return fp8;
}

OwnedTensor dequantize_rows(const Fp8Rows& rows, Stream stream) {
  OwnedTensor values(rows.values.shape(), DType::f32, rows.values.tensor().device());  // [R, K]
  dequantize_1x128(values, rows.values, rows.scales, stream);
  return values;
}

namespace {

// Unfilled buffers for the token-padded quantisation of sorted [R, C] over expert_offsets' E experts: [C, P] and
// [P / 128, C], P = padded_expert_rows(R, E).
Fp8ExpertTokenBuffers expert_token_buffers(const Tensor& sorted, const Tensor& expert_offsets) {
  int64_t padded_rows = padded_expert_rows(sorted.size(0), expert_offsets.numel() - 1);
  return {OwnedTensor(Shape{sorted.size(1), padded_rows}, DType::e4m3, sorted.device()),
          OwnedTensor(Shape{padded_rows / kFp8TileSize, sorted.size(1)}, DType::f32, sorted.device())};
}

}  // namespace

Fp8ExpertTokenBuffers quantize_tokens_by_expert(const Tensor& sorted, const Tensor& expert_offsets,
                                                const Tensor& padded, bool pow2_scales, Stream stream) {
  HAI_CHECK(sorted.rank() == 2, "fp8 expert tokens: {} must be a matrix", sorted.str());
  Fp8ExpertTokenBuffers fp8 = expert_token_buffers(sorted, expert_offsets);
  quantize_expert_tokens(fp8.tokens(), sorted, expert_offsets, padded, pow2_scales, stream);
  return fp8;
}

Fp8RowsAndExpertTokens quantize_rows_and_tokens_by_expert(const Tensor& sorted, const Tensor& expert_offsets,
                                                          const Tensor& padded, bool pow2_scales, Stream stream) {
  HAI_CHECK(sorted.rank() == 2, "fp8 rows and expert tokens: {} must be a matrix", sorted.str());
  Fp8RowsAndExpertTokens fp8{Fp8Rows(sorted.size(0), sorted.size(1), sorted.device()),
                             expert_token_buffers(sorted, expert_offsets)};
  quantize_rows_and_expert_tokens(fp8.rows.values, fp8.rows.scales, fp8.tokens.tokens(), sorted, expert_offsets,
                                  padded, pow2_scales, stream);
  return fp8;
}

}  // namespace hai
