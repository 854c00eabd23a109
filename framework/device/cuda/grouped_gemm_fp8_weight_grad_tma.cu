// The FP8 expert weight gradient on the warp-specialised TMA loop (grouped_gemm_tma_fp8_weight_grad.cuh) and its
// launch.

#include "framework/device/cuda/grouped_gemm_fp8_weight_grad_kernels.h"
#include "framework/device/cuda/grouped_gemm_tma_fp8_weight_grad.cuh"
#include "framework/device/cuda/tensor_map.h"

namespace hai::cuda::kernels {
namespace {

using tma::Fp8WeightGradMath;

bool aligned(const void* pointer, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// A persistent grid of one block per multiprocessor. d_y_map: d_y [N, P]; x_map: x [K, P]; gradient_map: the
// gradients [E, N, K].
__global__ void __launch_bounds__(tma::kThreads, 1)
    grouped_gemm_fp8_weight_grad_tma_kernel(const __grid_constant__ CUtensorMap d_y_map,
                                            const __grid_constant__ CUtensorMap x_map,
                                            const __grid_constant__ CUtensorMap gradient_map,
                                            GroupedGemmFp8WeightGradArguments arguments) {
#if defined(HAI_WGMMA_AVAILABLE)
  tma::WeightGradSchedule schedule{arguments.padded, arguments.experts, arguments.n / tma::kBlockRows,
                                   arguments.k / Fp8WeightGradMath::kBlockColumns, arguments.beta != 0.0f};
  tma::Fp8WeightGradProblem problem{d_y_map, x_map, gradient_map, schedule, arguments};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  tma::multiply_tiles(problem, shared_bytes);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (grouped_gemm_fp8_weight_grad.cc asks wgmma_applies)
#endif
}

}  // namespace

// The maps' strides are whole 16 bytes (P, and the gradients' rows and experts), the copies' coordinates fit 32
// bits, the float2 loads of x's scales are aligned, and the experts' gradients do not overlap (one expert: any
// stride, its map uses N * K).
bool grouped_gemm_fp8_weight_grad_tma_fits(const GroupedGemmFp8WeightGradArguments& arguments) {
  bool apart = arguments.experts == 1 ||
               (arguments.expert_stride >= arguments.n * arguments.k && arguments.expert_stride % 4 == 0);
  return arguments.n % tma::kBlockRows == 0 && arguments.k % Fp8WeightGradMath::kBlockColumns == 0 &&
         arguments.tokens % Fp8WeightGradMath::kDepth == 0 && arguments.tokens <= INT32_MAX &&
         arguments.n <= INT32_MAX && arguments.k <= INT32_MAX && apart && aligned(arguments.d_y, 16) &&
         aligned(arguments.x, 16) && aligned(arguments.x_scales, 8) && aligned(arguments.gradients, 16);
}

cudaError_t launch_grouped_gemm_fp8_weight_grad_tma(const GroupedGemmFp8WeightGradArguments& arguments,
                                                    cudaStream_t stream) {
  auto tokens = static_cast<uint64_t>(arguments.tokens), n = static_cast<uint64_t>(arguments.n),
       k = static_cast<uint64_t>(arguments.k), experts = static_cast<uint64_t>(arguments.experts);
  constexpr CUtensorMapDataType kBytes = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  constexpr uint32_t kDepth = Fp8WeightGradMath::kDepth, kColumns = Fp8WeightGradMath::kBlockColumns;
  // d_y [N, P] and x [K, P] in (128 tokens, 128 rows) boxes; the gradients [E, N, K] fp32 in (32 columns = 128
  // bytes, 64 rows, 1) boxes.
  TensorMapShape d_y_shape{kBytes, 2, {tokens, n, 0}, {tokens, 0}, {kDepth, tma::kBlockRows, 0}};
  TensorMapShape x_shape{kBytes, 2, {tokens, k, 0}, {tokens, 0}, {kDepth, kColumns, 0}};
  uint64_t expert_floats = arguments.experts == 1 ? n * k : static_cast<uint64_t>(arguments.expert_stride);
  TensorMapShape gradient_shape{CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, {k, n, experts},
                                {k * sizeof(float), expert_floats * sizeof(float)},
                                {128 / sizeof(float), tma::kConsumerRows, 1}};
  CUtensorMap d_y_map, x_map, gradient_map;
  cudaError_t status = encode_tensor_maps({{&d_y_map, arguments.d_y, d_y_shape},
                                           {&x_map, arguments.x, x_shape},
                                           {&gradient_map, arguments.gradients, gradient_shape}});
  if (status != cudaSuccess) return status;
  int64_t tiles = arguments.experts * (arguments.n / tma::kBlockRows) * (arguments.k / kColumns);
  return tma::launch_persistent<Fp8WeightGradMath>(grouped_gemm_fp8_weight_grad_tma_kernel, tiles, stream, d_y_map,
                                                   x_map, gradient_map, arguments);
}

}  // namespace hai::cuda::kernels
