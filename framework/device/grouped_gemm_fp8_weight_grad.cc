#include "framework/device/grouped_gemm_fp8_weight_grad.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"
#endif

namespace hai {
namespace {

int64_t blocks_of(int64_t padded_rows) { return padded_rows / kFp8TileSize; }

void check_offsets(const Tensor& offsets, Device device, const char* what) {
  HAI_CHECK(offsets.rank() == 1 && offsets.numel() >= 1, "fp8 expert tokens: {} must be [E + 1], got {}", what,
            offsets.str());
  check_dtype(offsets, DType::i32, what);
  HAI_CHECK(offsets.device() == device, "fp8 expert tokens: {} on {}, expected {}", what, to_string(offsets.device()),
            to_string(device));
}

// tokens: values [C, P] e4m3, P a multiple of 128, scales [P / 128, C] fp32, on one device.
void check_tokens(const Fp8ExpertTokens& tokens, const char* what) {
  HAI_CHECK(tokens.values.rank() == 2 && tokens.values.size(1) % kFp8TileSize == 0,
            "fp8 expert tokens {}: values must be [C, P] with P a multiple of 128, got {}", what, tokens.values.str());
  check_dtype(tokens.values, DType::e4m3, what);
  check_dtype(tokens.scales, DType::f32, what);
  check_shape(tokens.scales, Shape{blocks_of(tokens.values.size(1)), tokens.values.size(0)}, what);
  check_same_device(tokens.scales, tokens.values, what);
}

// quantize_expert_tokens' operands: x [R, C] fp32 or bf16, tokens [C, P >= padded_expert_rows(R, E)], offsets and
// padded offsets [E + 1], all on x's device.
void check_expert_token_operands(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                                 const Tensor& padded) {
  HAI_CHECK(x.rank() == 2 && (x.dtype() == DType::f32 || x.dtype() == DType::bf16),
            "quantize_expert_tokens: x must be an fp32 or bf16 [R, C] matrix, got {}", x.str());
  check_tokens(tokens, "quantize_expert_tokens output");
  HAI_CHECK(tokens.values.size(0) == x.size(1), "quantize_expert_tokens: output {} for x {} (must be [C, P])",
            tokens.values.str(), x.str());
  int64_t experts = expert_offsets.numel() - 1;
  HAI_CHECK(tokens.values.size(1) >= padded_expert_rows(x.size(0), experts),
            "quantize_expert_tokens: P {} is less than padded_expert_rows({}, {}) = {}", tokens.values.size(1),
            x.size(0), experts, padded_expert_rows(x.size(0), experts));
  check_same_device(tokens.values, x, "quantize_expert_tokens");
  check_offsets(expert_offsets, x.device(), "expert_offsets");
  check_offsets(padded, x.device(), "padded offsets");
  check_shape(padded, expert_offsets.shape(), "padded offsets");
}

}  // namespace

int64_t padded_expert_rows(int64_t rows, int64_t experts) {
  HAI_CHECK(rows >= 0 && experts >= 0, "padded_expert_rows: {} rows over {} experts", rows, experts);
  return (rows + (kFp8TileSize - 1) * experts + kFp8TileSize - 1) / kFp8TileSize * kFp8TileSize;
}

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets, [[maybe_unused]] Stream stream) {
  check_offsets(expert_offsets, expert_offsets.device(), "expert_offsets");
  check_offsets(padded, expert_offsets.device(), "padded offsets");
  check_shape(padded, expert_offsets.shape(), "padded offsets");
  if (padded.device().is_cpu()) return cpu::pad_expert_offsets(padded, expert_offsets);
#ifdef HAI_WITH_CUDA
  return cuda::pad_expert_offsets(padded, expert_offsets, stream);
#else
  throw_no_backend("pad_expert_offsets", padded.device());
#endif
}

void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales, [[maybe_unused]] Stream stream) {
  check_expert_token_operands(tokens, x, expert_offsets, padded);
  if (x.device().is_cpu()) return cpu::quantize_expert_tokens(tokens, x, expert_offsets, padded, pow2_scales);
#ifdef HAI_WITH_CUDA
  return cuda::quantize_expert_tokens(tokens, x, expert_offsets, padded, pow2_scales, stream);
#else
  throw_no_backend("quantize_expert_tokens", x.device());
#endif
}

void quantize_rows_and_expert_tokens(const Tensor& q, const Tensor& scales, const Fp8ExpertTokens& tokens,
                                     const Tensor& x, const Tensor& expert_offsets, const Tensor& padded,
                                     bool pow2_scales, Stream stream) {
  check_quantize_1x128_operands(q, scales, x);
  check_expert_token_operands(tokens, x, expert_offsets, padded);
  if (x.device().is_cpu()) {
    quantize_1x128(q, scales, x, pow2_scales, stream);
    return quantize_expert_tokens(tokens, x, expert_offsets, padded, pow2_scales, stream);
  }
#ifdef HAI_WITH_CUDA
  cuda::quantize_rows_and_expert_tokens(q, scales, tokens, x, expert_offsets, padded, pow2_scales, stream);
#else
  throw_no_backend("quantize_rows_and_expert_tokens", x.device());
#endif
}

void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta, [[maybe_unused]] Stream stream) {
  HAI_CHECK(beta == 0.0f || beta == 1.0f, "grouped_gemm_fp8_weight_grad: beta must be 0 or 1, got {}", beta);
  check_tokens(d_y, "grouped_gemm_fp8_weight_grad d_y");
  check_tokens(x, "grouped_gemm_fp8_weight_grad x");
  HAI_CHECK(d_y.values.size(1) == x.values.size(1), "grouped_gemm_fp8_weight_grad: d_y {} and x {} differ in P",
            d_y.values.str(), x.values.str());
  check_same_device(x.values, d_y.values, "grouped_gemm_fp8_weight_grad");
  Device device = x.values.device();
  HAI_CHECK(grad.experts >= 0 && grad.experts + 1 == padded.numel(),
            "grouped_gemm_fp8_weight_grad: {} experts' gradients for padded offsets {}", grad.experts, padded.str());
  check_offsets(padded, device, "padded offsets");
  check_shape(grad.first, Shape{d_y.values.size(0), x.values.size(0)}, "grouped_gemm_fp8_weight_grad gradient");
  check_dtype(grad.first, DType::f32, "grouped_gemm_fp8_weight_grad gradient");
  check_same_device(grad.first, x.values, "grouped_gemm_fp8_weight_grad");
  HAI_CHECK(grad.experts <= 1 || grad.expert_stride >= grad.first.numel(),
            "grouped_gemm_fp8_weight_grad: expert stride {} is shorter than one {} gradient", grad.expert_stride,
            grad.first.shape().str());
  if (device.is_cpu()) return cpu::grouped_gemm_fp8_weight_grad(grad, d_y, x, padded, beta);
#ifdef HAI_WITH_CUDA
  return cuda::grouped_gemm_fp8_weight_grad(grad, d_y, x, padded, beta, stream);
#else
  throw_no_backend("grouped_gemm_fp8_weight_grad", device);
#endif
}

}  // namespace hai
