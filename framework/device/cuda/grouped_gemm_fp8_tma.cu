// The FP8 grouped GEMM on the warp-specialised TMA loop (grouped_gemm_tma_fp8.cuh) and its launch.

#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"
#include "framework/device/cuda/grouped_gemm_tma_fp8.cuh"
#include "framework/device/cuda/tensor_map.h"

namespace hai::cuda::kernels {
namespace {

using tma::Fp8Math;

// A persistent grid of one block per multiprocessor. x_map: x [R, K]; weight_map: W [E, N, K]; y_map: y [R, N].
__global__ void __launch_bounds__(tma::kThreads, 1)
    grouped_gemm_fp8_tma_kernel(const __grid_constant__ CUtensorMap x_map,
                                const __grid_constant__ CUtensorMap weight_map,
                                const __grid_constant__ CUtensorMap y_map, GroupedGemmFp8Arguments arguments) {
#if defined(HAI_WGMMA_AVAILABLE)
  tma::CopyOut copy_out = arguments.bf16_output || arguments.beta == 0.0f ? tma::CopyOut::store
                          : arguments.beta == 1.0f                         ? tma::CopyOut::add
                                                                           : tma::CopyOut::none;
  tma::Schedule schedule{arguments.offsets, arguments.experts, arguments.n / Fp8Math::kBlockColumns,
                         arguments.k / Fp8Math::kDepth, copy_out, arguments.bf16_output};
  tma::Fp8RowTileProblem problem{x_map, weight_map, y_map, schedule, arguments};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  tma::multiply_tiles(problem, shared_bytes);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (grouped_gemm_fp8.cc asks wgmma_applies)
#endif
}

}  // namespace

bool grouped_gemm_fp8_tma_fits(const GroupedGemmFp8Arguments& arguments) {
  auto aligned = [](const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; };
  return arguments.n % Fp8Math::kBlockColumns == 0 && arguments.k > 0 && arguments.k % Fp8Math::kDepth == 0 &&
         arguments.rows <= INT32_MAX && arguments.weight_stride >= arguments.n * arguments.k &&
         arguments.weight_stride % 16 == 0 && aligned(arguments.x) && aligned(arguments.weights) &&
         aligned(arguments.y);
}

cudaError_t launch_grouped_gemm_fp8_tma(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream) {
  auto rows = static_cast<uint64_t>(arguments.rows), n = static_cast<uint64_t>(arguments.n),
       k = static_cast<uint64_t>(arguments.k), experts = static_cast<uint64_t>(arguments.experts);
  constexpr CUtensorMapDataType kBytes = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  constexpr uint32_t kDepth = Fp8Math::kDepth, kColumns = Fp8Math::kBlockColumns;
  // x [R, K] in (128 deep, 128 rows) boxes; W [E, N, K] in (128 deep, 128 columns, 1) boxes; y [R, N] in
  // (128 bytes, 64 rows) boxes.
  TensorMapShape x_shape{kBytes, 2, {k, rows, 0}, {k, 0}, {kDepth, tma::kBlockRows, 0}};
  TensorMapShape weight_shape{kBytes, 3, {k, n, experts}, {k, static_cast<uint64_t>(arguments.weight_stride)},
                              {kDepth, kColumns, 1}};
  uint64_t y_element = arguments.bf16_output ? 2 : sizeof(float);
  TensorMapShape y_shape{arguments.bf16_output ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                         2, {n, rows, 0}, {n * y_element, 0},
                         {static_cast<uint32_t>(128 / y_element), tma::kConsumerRows, 0}};
  CUtensorMap x_map, weight_map, y_map;
  cudaError_t status = encode_tensor_maps(
      {{&x_map, arguments.x, x_shape}, {&weight_map, arguments.weights, weight_shape}, {&y_map, arguments.y, y_shape}});
  if (status != cudaSuccess) return status;
  int64_t tiles = row_tile_slots(arguments.rows, arguments.experts, tma::kBlockRows) * (arguments.n / kColumns);
  return tma::launch_persistent<Fp8Math>(grouped_gemm_fp8_tma_kernel, tiles, stream, x_map, weight_map, y_map,
                                         arguments);
}

}  // namespace hai::cuda::kernels
