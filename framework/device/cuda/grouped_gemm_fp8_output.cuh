#pragma once
// The epilogue of the FP8 grouped GEMM kernels: one block tile's results into y [R, N].

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"

namespace hai::cuda::kernels::fp8_output {

// Where a block tile's results go: its rows (one expert's) and columns from column_begin.
struct OutputTile {
  const GroupedGemmFp8Arguments* arguments;
  ExpertRowTile rows;
  int64_t column_begin;
};

// The index in y of the tile's (row, column), or false outside the tile's rows or past N.
__device__ inline bool output_index(const OutputTile& tile, int row, int column, int64_t* index) {
  int64_t global_row = tile.rows.row_begin + row;
  int64_t global_column = tile.column_begin + column;
  if (global_row >= tile.rows.row_end || global_column >= tile.arguments->n) return false;
  *index = global_row * tile.arguments->n + global_column;
  return true;
}

// y[row, column] <- sum (+ y with beta 1) in fp32, or bf16(sum): the CPU's store (framework/device/cpu/gemm.cc,
// alpha 1), one rounding per operation. Elements outside the tile's rows or past N are left alone.
__device__ inline void store(const OutputTile& tile, int row, int column, float sum) {
  const GroupedGemmFp8Arguments& arguments = *tile.arguments;
  int64_t index;
  if (!output_index(tile, row, column, &index)) return;
  if (arguments.bf16_output) {
    static_cast<__nv_bfloat16*>(arguments.y)[index] = __float2bfloat16_rn(sum);
    return;
  }
  float* out = static_cast<float*>(arguments.y) + index;
  *out = arguments.beta == 0.0f ? sum : __fadd_rn(sum, __fmul_rn(arguments.beta, *out));
}

// store() of (row, column) and (row, column + 1) at once; N even, y 8-byte aligned.
__device__ inline void store_pair(const OutputTile& tile, int row, int column, float sum0, float sum1) {
  const GroupedGemmFp8Arguments& arguments = *tile.arguments;
  int64_t index;
  if (!output_index(tile, row, column, &index)) return;
  if (arguments.bf16_output) {
    *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(arguments.y) + index) =
        __floats2bfloat162_rn(sum0, sum1);
    return;
  }
  auto* out = reinterpret_cast<float2*>(static_cast<float*>(arguments.y) + index);
  float2 result{sum0, sum1};
  if (arguments.beta != 0.0f) {
    float2 previous = *out;
    result.x = __fadd_rn(sum0, __fmul_rn(arguments.beta, previous.x));
    result.y = __fadd_rn(sum1, __fmul_rn(arguments.beta, previous.y));
  }
  *out = result;
}

}  // namespace hai::cuda::kernels::fp8_output
