// The FP8 grouped GEMM's exact SIMT kernel (grouped_gemm_fp8_exact.cuh) and its launch.

#include "framework/device/cuda/grouped_gemm_fp8_exact.cuh"
#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/grouped_gemm_fp8_output.cuh"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8_exact::kTile;

constexpr int64_t kWeightBlock = 128;  // outer elements per 128x128 weight scale

unsigned int blocks(int64_t extent) { return static_cast<unsigned int>((extent + kTile - 1) / kTile); }

// Grid: (N tiles, row-tile slots).
__global__ void __launch_bounds__(fp8_exact::kThreads)
    grouped_gemm_fp8_exact_kernel(GroupedGemmFp8Arguments arguments) {
  ExpertRowTile rows;
  if (!find_expert_row_tile(arguments.offsets, arguments.experts, blockIdx.y, kTile, &rows)) return;
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * kTile;
  fp8_exact::OperandSource a{arguments.x, arguments.x_scales, 1, rows.row_begin, rows.row_end, arguments.k};
  fp8_exact::OperandSource b{arguments.weights + rows.expert * arguments.weight_stride,
                             arguments.weight_scales + rows.expert * arguments.scale_stride, kWeightBlock,
                             column_begin, arguments.n, arguments.k};
  float sums[4][4];
  fp8_exact::multiply_tiles(sums, a, b, 0, arguments.k);
  fp8_output::OutputTile tile{&arguments, rows, column_begin};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      fp8_output::store(tile, fp8_exact::thread_row() + i, fp8_exact::thread_column() + j, sums[i][j]);
    }
  }
}

}  // namespace

cudaError_t launch_grouped_gemm_fp8_exact(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream) {
  dim3 grid(blocks(arguments.n), static_cast<unsigned int>(row_tile_slots(arguments.rows, arguments.experts, kTile)));
  grouped_gemm_fp8_exact_kernel<<<grid, fp8_exact::kThreads, 0, stream>>>(arguments);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
