// The FP8 grouped GEMM's wgmma kernel (grouped_gemm_fp8_wgmma.cuh) and its launch.

#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/grouped_gemm_fp8_output.cuh"
#include "framework/device/cuda/grouped_gemm_fp8_wgmma.cuh"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8_wgmma::kTile;

int64_t scale_blocks(int64_t extent) { return (extent + kTile - 1) / kTile; }

// This thread's scale rows for the block tile of `rows` and column block `column_block`.
__device__ fp8_wgmma::StageScales thread_scales(const GroupedGemmFp8Arguments& arguments, const ExpertRowTile& rows,
                                                int64_t column_block) {
  int64_t k_blocks = (arguments.k + kTile - 1) / kTile;
  int64_t top_row = rows.row_begin + fp8_wgmma::thread_top_row();
  auto row_scales = [&](int64_t row) { return row < rows.row_end ? arguments.x_scales + row * k_blocks : nullptr; };
  const float* expert_scales = arguments.weight_scales + rows.expert * arguments.scale_stride;
  return {row_scales(top_row), row_scales(top_row + 8), expert_scales + column_block * k_blocks};
}

// Grid: (N tiles, row-tile slots); N tiles vary fastest, so the blocks running together share their x rows and one
// expert's weights in L2.
__global__ void __launch_bounds__(fp8_wgmma::kThreads, 1)
    grouped_gemm_fp8_wgmma_kernel(GroupedGemmFp8Arguments arguments) {
  ExpertRowTile rows;
  if (!find_expert_row_tile(arguments.offsets, arguments.experts, blockIdx.y, kTile, &rows)) return;
  int64_t n = arguments.n, k = arguments.k;
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * kTile;
  const uint8_t* x = arguments.x + rows.row_begin * k;                                        // [tile rows, K]
  const uint8_t* weights = arguments.weights + rows.expert * arguments.weight_stride + column_begin * k;  // [128, K]
  fp8_wgmma::OperandSource a{x, k, rows.row_end - rows.row_begin, k};
  fp8_wgmma::OperandSource b{weights, k, n - column_begin, k};
  fp8_wgmma::StageScales scales = thread_scales(arguments, rows, blockIdx.x);
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  fp8_wgmma::Accumulators accumulators;
  fp8_wgmma::multiply_tiles(accumulators, a, b, scales, k, shared_bytes);
  fp8_output::OutputTile tile{&arguments, rows, column_begin};
  wgmma::for_each_accumulator_pair(accumulators, [&](int row, int column, float sum0, float sum1) {
    fp8_output::store_pair(tile, row, column, sum0, sum1);
  });
}

}  // namespace

cudaError_t launch_grouped_gemm_fp8_wgmma(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream) {
  auto kernel = grouped_gemm_fp8_wgmma_kernel;
  cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, fp8_wgmma::kSharedBytes);
  if (status != cudaSuccess) return status;
  dim3 grid(static_cast<unsigned int>(scale_blocks(arguments.n)),
            static_cast<unsigned int>(row_tile_slots(arguments.rows, arguments.experts, kTile)));
  kernel<<<grid, fp8_wgmma::kThreads, fp8_wgmma::kSharedBytes, stream>>>(arguments);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
