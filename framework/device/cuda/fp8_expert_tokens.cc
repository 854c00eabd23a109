#include "framework/device/cuda/fp8_expert_tokens_kernels.h"
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(expert_offsets.device(), stream);
  check_launch(kernels::pad_expert_offsets(padded.data<int32_t>(), expert_offsets.data<int32_t>(),
                                           expert_offsets.numel() - 1, cuda_stream),
               "expert offset padding");
}

void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  // values: [C, P] e4m3, scales: [P / 128, C] fp32
  kernels::Fp8ExpertTokensOut out{&tokens.values.data<e4m3>()->bits, tokens.scales.data<float>(),
                                  tokens.values.size(1), tokens.values.size(0)};
  kernels::ExpertRowOffsets experts{expert_offsets.data<int32_t>(), padded.data<int32_t>(),
                                    expert_offsets.numel() - 1};
  cudaError_t status =
      x.dtype() == DType::bf16
          ? kernels::quantize_expert_tokens_bf16(out, x.raw(), experts, pow2_scales, cuda_stream)
          : kernels::quantize_expert_tokens(out, x.data<float>(), experts, pow2_scales, cuda_stream);
  check_launch(status, "fp8 expert token quantisation");
}

}  // namespace hai::cuda
