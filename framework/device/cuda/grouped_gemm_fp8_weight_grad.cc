#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_fp8_weight_grad_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

kernels::GroupedGemmFp8WeightGradArguments arguments_for(const ExpertWeights& grad, const Fp8ExpertTokens& d_y,
                                                         const Fp8ExpertTokens& x, const int32_t* padded,
                                                         float beta) {
  return {
      .gradients = grad.first.data<float>(),
      .expert_stride = grad.expert_stride,
      .d_y = static_cast<const uint8_t*>(d_y.values.raw()),
      .d_y_scales = d_y.scales.data<float>(),
      .x = static_cast<const uint8_t*>(x.values.raw()),
      .x_scales = x.scales.data<float>(),
      .padded = padded,
      .experts = grad.experts,
      .n = d_y.values.size(0),
      .k = x.values.size(0),
      .tokens = x.values.size(1),
      .beta = beta,
  };
}

}  // namespace

bool grouped_gemm_fp8_weight_grad_tma_fits(const ExpertWeights& grad, const Fp8ExpertTokens& d_y,
                                           const Fp8ExpertTokens& x) {
  HAI_CUDA_CHECK(cudaSetDevice(x.values.device().index));
  return wgmma_runs_here() && kernels::grouped_gemm_fp8_weight_grad_tma_fits(arguments_for(grad, d_y, x, nullptr, 0));
}

void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta, Stream stream,
                                  GroupedGemmFp8WeightGradKernel kernel) {
  cudaStream_t cuda_stream = prepare_launch(x.values.device(), stream);
  kernels::GroupedGemmFp8WeightGradArguments arguments = arguments_for(grad, d_y, x, padded.data<int32_t>(), beta);
  if (arguments.experts == 0 || arguments.n == 0 || arguments.k == 0) return;
  bool tma = kernel != GroupedGemmFp8WeightGradKernel::exact && wgmma_runs_here() &&
             kernels::grouped_gemm_fp8_weight_grad_tma_fits(arguments);
  HAI_CHECK(tma || kernel != GroupedGemmFp8WeightGradKernel::tma,
            "grouped_gemm_fp8_weight_grad: the TMA kernel cannot run here (needs an sm_90a build on a 9.x device, N "
            "and K multiples of 128, 16-byte aligned operands, experts' gradients apart by a multiple of 4 floats), "
            "got N {} K {} P {}, expert stride {}", arguments.n, arguments.k, arguments.tokens,
            arguments.expert_stride);
  // NOTE: without tokens (P = 0) there is nothing to multiply, nor a tensor map of the operands: beta 1 leaves the
  // gradients alone, and the exact kernel writes beta 0's zeros whichever kernel was asked for.
  if (arguments.tokens == 0 && beta != 0.0f) return;
  cudaError_t status = tma && arguments.tokens > 0
                           ? kernels::launch_grouped_gemm_fp8_weight_grad_tma(arguments, cuda_stream)
                           : kernels::launch_grouped_gemm_fp8_weight_grad_exact(arguments, cuda_stream);
  check_launch(status, "grouped_gemm_fp8_weight_grad");
}

}  // namespace hai::cuda
