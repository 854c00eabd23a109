#include "framework/device/cuda/grouped_gemm.h"

#include "framework/device/cuda/grouped_gemm_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// The dispatcher accepts fp32, bf16 and fp16 inputs only.
kernels::GroupedGemmInput input_type(DType dtype) {
  if (dtype == DType::bf16) return kernels::GroupedGemmInput::bf16;
  if (dtype == DType::f16) return kernels::GroupedGemmInput::f16;
  return kernels::GroupedGemmInput::f32;
}

}  // namespace

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  kernels::GroupedGemmArguments arguments{
      .y = y.raw(),
      .x = x.raw(),
      .weights = weights.first.raw(),
      .expert_stride = weights.expert_stride,
      .offsets = expert_offsets.data<int32_t>(),
      .experts = weights.experts,
      .rows = x.size(0),
      .n = y.size(1),
      .k = x.size(1),
      .input_type = input_type(x.dtype()),
      .transpose_weights = options.transpose_weights,
      .beta = options.beta,
      .bf16_output = y.dtype() == DType::bf16,
  };
  check_launch(kernels::grouped_gemm(arguments, cuda_stream), "grouped_gemm");
}

void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  kernels::GroupedWeightGradArguments arguments{
      .gradients = gradients.first.data<float>(),
      .expert_stride = gradients.expert_stride,
      .d_y = d_y.raw(),
      .x = x.raw(),
      .offsets = expert_offsets.data<int32_t>(),
      .experts = gradients.experts,
      .rows = x.size(0),
      .n = d_y.size(1),
      .k = x.size(1),
      .input_type = input_type(x.dtype()),
      .beta = beta,
  };
  check_launch(kernels::grouped_gemm_weight_grad(arguments, cuda_stream), "grouped_gemm_weight_grad");
}

}  // namespace hai::cuda
