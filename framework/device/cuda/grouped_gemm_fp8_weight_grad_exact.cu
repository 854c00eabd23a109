// The FP8 expert weight gradient's exact SIMT kernel (the FP8 exact loop, grouped_gemm_fp8_exact.cuh, on the
// token-padded operands) and its launch: the CPU reference's operations in its order, bit for bit.

#include "framework/device/cuda/grouped_gemm_fp8_exact.cuh"
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad_kernels.h"

namespace hai::cuda::kernels {
namespace {

using fp8_exact::kTile;

// One token-padded operand, values [C, P] e4m3 and scales [P / 128, C]: element (column c, token p) is
// e4m3(values[c * P + p]) * scales[p / 128 * C + c]. The block tile reads columns [column_begin, +kTile); columns
// from C on read as 0 (they only feed outputs that are not stored).
struct TokenOperandSource {
  const uint8_t* values;
  const float* scales;
  int64_t columns;  // C
  int64_t tokens;   // P
  int64_t column_begin;

  __device__ float dequantized(int tile_column, int64_t token) const {
    int64_t column = column_begin + tile_column;
    if (column >= columns) return 0.0f;
    float scale = scales[token / fp8_exact::kScaleDepth * columns + column];
    return __fmul_rn(fp8_exact::e4m3_value(values[column * tokens + token]), scale);
  }
};

unsigned int tiles(int64_t extent) { return static_cast<unsigned int>((extent + kTile - 1) / kTile); }

// Grid: (K tiles, N tiles, E). The block's 64 x 64 outputs of expert blockIdx.z's gradient: the sums over its
// tokens, written (beta 0; zeros without tokens) or added (beta 1; untouched without tokens, as on the CPU).
__global__ void __launch_bounds__(fp8_exact::kThreads)
    grouped_gemm_fp8_weight_grad_exact_kernel(GroupedGemmFp8WeightGradArguments arguments) {
  int64_t expert = blockIdx.z;
  int64_t token_begin = arguments.padded[expert], token_end = arguments.padded[expert + 1];
  if (arguments.beta != 0.0f && token_begin == token_end) return;
  int64_t n_begin = static_cast<int64_t>(blockIdx.y) * kTile, k_begin = static_cast<int64_t>(blockIdx.x) * kTile;
  TokenOperandSource d_y{arguments.d_y, arguments.d_y_scales, arguments.n, arguments.tokens, n_begin};
  TokenOperandSource x{arguments.x, arguments.x_scales, arguments.k, arguments.tokens, k_begin};
  float sums[4][4];
  fp8_exact::multiply_tiles(sums, d_y, x, token_begin, token_end);
  float* gradient = arguments.gradients + expert * arguments.expert_stride;  // [N, K]
  for (int i = 0; i < 4; ++i) {
    int64_t row = n_begin + fp8_exact::thread_row() + i;
    for (int j = 0; j < 4; ++j) {
      int64_t column = k_begin + fp8_exact::thread_column() + j;
      if (row >= arguments.n || column >= arguments.k) continue;
      float& element = gradient[row * arguments.k + column];
      element = arguments.beta == 0.0f ? sums[i][j] : __fadd_rn(sums[i][j], element);
    }
  }
}

}  // namespace

cudaError_t launch_grouped_gemm_fp8_weight_grad_exact(const GroupedGemmFp8WeightGradArguments& arguments,
                                                      cudaStream_t stream) {
  dim3 grid(tiles(arguments.k), tiles(arguments.n), static_cast<unsigned int>(arguments.experts));
  grouped_gemm_fp8_weight_grad_exact_kernel<<<grid, fp8_exact::kThreads, 0, stream>>>(arguments);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
