#include <cstdint>

#include "framework/device/cuda/fp8_expert_tokens_kernels.h"
#include "framework/device/cuda/fp8_quantize.h"
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// values: [C, P] e4m3, scales: [P / 128, C] fp32
kernels::Fp8ExpertTokensOut tokens_out(const Fp8ExpertTokens& tokens) {
  return {&tokens.values.data<e4m3>()->bits, tokens.scales.data<float>(), tokens.values.size(1),
          tokens.values.size(0)};
}

kernels::ExpertRowOffsets expert_row_offsets(const Tensor& expert_offsets, const Tensor& padded) {
  return {expert_offsets.data<int32_t>(), padded.data<int32_t>(), expert_offsets.numel() - 1};
}

bool aligned_16(const Tensor& tensor) { return reinterpret_cast<uintptr_t>(tensor.raw()) % 16 == 0; }

// Whether the dual kernel takes x: bf16, C a multiple of 8, x, q and the token values 16-byte aligned.
bool dual_kernel_fits(const Tensor& q, const Fp8ExpertTokens& tokens, const Tensor& x) {
  return x.dtype() == DType::bf16 && x.size(1) % 8 == 0 && aligned_16(x) && aligned_16(q) &&
         aligned_16(tokens.values);
}

}  // namespace

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(expert_offsets.device(), stream);
  check_launch(kernels::pad_expert_offsets(padded.data<int32_t>(), expert_offsets.data<int32_t>(),
                                           expert_offsets.numel() - 1, cuda_stream),
               "expert offset padding");
}

void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  kernels::Fp8ExpertTokensOut out = tokens_out(tokens);
  kernels::ExpertRowOffsets experts = expert_row_offsets(expert_offsets, padded);
  cudaError_t status =
      x.dtype() == DType::bf16
          ? kernels::quantize_expert_tokens_bf16(out, x.raw(), experts, pow2_scales, cuda_stream)
          : kernels::quantize_expert_tokens(out, x.data<float>(), experts, pow2_scales, cuda_stream);
  check_launch(status, "fp8 expert token quantisation");
}

void quantize_rows_and_expert_tokens(const Tensor& q, const Tensor& scales, const Fp8ExpertTokens& tokens,
                                     const Tensor& x, const Tensor& expert_offsets, const Tensor& padded,
                                     bool pow2_scales, Stream stream) {
  if (!dual_kernel_fits(q, tokens, x)) {
    if (x.dtype() == DType::bf16) {
      cuda::quantize_1x128_bf16(q, scales, x, pow2_scales, stream);
    } else {
      cuda::quantize_tiles(q, scales, x, {1, 128}, pow2_scales, false, stream);
    }
    return cuda::quantize_expert_tokens(tokens, x, expert_offsets, padded, pow2_scales, stream);
  }
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  // q: [R, C] e4m3, scales: [R, ceil(C / 128)] fp32
  kernels::Fp8RowsOut rows{&q.data<e4m3>()->bits, scales.data<float>(), x.size(0)};
  check_launch(kernels::quantize_rows_and_expert_tokens_bf16(rows, tokens_out(tokens), x.raw(),
                                                             expert_row_offsets(expert_offsets, padded), pow2_scales,
                                                             cuda_stream),
               "fp8 row and expert token quantisation");
}

}  // namespace hai::cuda
