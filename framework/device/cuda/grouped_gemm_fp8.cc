#include "framework/device/cuda/grouped_gemm_fp8.h"

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

bool aligned(const void* pointer, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

kernels::GroupedGemmFp8Arguments arguments_for(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                                               const int32_t* offsets, float beta) {
  return {
      .y = y.raw(),
      .x = static_cast<const uint8_t*>(x.values.raw()),
      .x_scales = x.scales.data<float>(),
      .weights = static_cast<const uint8_t*>(weights.values.first.raw()),
      .weight_stride = weights.values.expert_stride,
      .weight_scales = weights.scales.first.data<float>(),
      .scale_stride = weights.scales.expert_stride,
      .offsets = offsets,
      .experts = weights.values.experts,
      .rows = x.values.size(0),
      .n = y.size(1),
      .k = x.values.size(1),
      .beta = beta,
      .bf16_output = y.dtype() == DType::bf16,
  };
}

// The wgmma kernel's conditions (grouped_gemm_fp8_kernels.h): 16-byte chunks of e4m3 along K that are wholly in
// or out of range, pairs of outputs, aligned copies.
bool wgmma_shapes_fit(const kernels::GroupedGemmFp8Arguments& arguments) {
  return arguments.k > 0 && arguments.k % 16 == 0 && arguments.n % 2 == 0 && arguments.weight_stride % 16 == 0 &&
         aligned(arguments.x, 16) && aligned(arguments.weights, 16) && aligned(arguments.y, 8);
}

}  // namespace

bool grouped_gemm_fp8_wgmma_fits(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights) {
  HAI_CUDA_CHECK(cudaSetDevice(x.values.device().index));
  return wgmma_runs_here() && wgmma_shapes_fit(arguments_for(y, x, weights, nullptr, 0.0f));
}

bool grouped_gemm_fp8_tma_fits(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights) {
  HAI_CUDA_CHECK(cudaSetDevice(x.values.device().index));
  return wgmma_runs_here() && kernels::grouped_gemm_fp8_tma_fits(arguments_for(y, x, weights, nullptr, 0.0f));
}

void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta, Stream stream, GroupedGemmFp8Kernel kernel) {
  cudaStream_t cuda_stream = prepare_launch(x.values.device(), stream);
  kernels::GroupedGemmFp8Arguments arguments = arguments_for(y, x, weights, expert_offsets.data<int32_t>(), beta);
  if (arguments.rows == 0 || arguments.n == 0 || arguments.experts == 0) return;
  bool tensor_cores = kernel != GroupedGemmFp8Kernel::exact && wgmma_runs_here();
  bool tma = tensor_cores && kernel != GroupedGemmFp8Kernel::wgmma && kernels::grouped_gemm_fp8_tma_fits(arguments);
  bool wgmma = tensor_cores && !tma && kernel != GroupedGemmFp8Kernel::tma && wgmma_shapes_fit(arguments);
  HAI_CHECK(tma || kernel != GroupedGemmFp8Kernel::tma,
            "grouped_gemm_fp8: the TMA kernel cannot run here (needs an sm_90a build on a 9.x device, N and K "
            "multiples of 128, 16-byte aligned operands), got N {} K {}", arguments.n, arguments.k);
  HAI_CHECK(wgmma || kernel != GroupedGemmFp8Kernel::wgmma,
            "grouped_gemm_fp8: the wgmma kernel cannot run here (needs an sm_90a build on a 9.x device, K > 0 a "
            "multiple of 16, N even, aligned operands), got N {} K {}", arguments.n, arguments.k);
  cudaError_t status = tma     ? kernels::launch_grouped_gemm_fp8_tma(arguments, cuda_stream)
                       : wgmma ? kernels::launch_grouped_gemm_fp8_wgmma(arguments, cuda_stream)
                               : kernels::launch_grouped_gemm_fp8_exact(arguments, cuda_stream);
  check_launch(status, "grouped_gemm_fp8");
}

}  // namespace hai::cuda
