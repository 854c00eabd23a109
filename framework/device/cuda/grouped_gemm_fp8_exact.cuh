#pragma once
// The exact main loop of the FP8 grouped GEMM (SIMT, any device, shape and alignment): a 64 x 64 block tile of
// dequant(A) @ dequant(B)^T with the CPU reference's operations in its order (framework/device/fp8_gemm.h), so the
// results are its bits: every element dequantised by one rounded multiply (e4m3 value * scale), then per output
// sum = 0; sum = sum + a'[k] * b'[k] for k = 0, 1, ..., K - 1, each product and each add rounded on its own
// (__fmul_rn / __fadd_rn: never contracted into an FMA). 32-deep slices of both operands are dequantised into
// shared memory; each of 256 threads keeps 4 x 4 sums.

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::fp8_exact {

inline constexpr int kTile = 64;
inline constexpr int kDepth = 32;     // reduction per shared-memory slice
inline constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each
inline constexpr int kScaleDepth = 128;

// One e4m3 operand, K-major: element (outer o, k) of the whole matrix is values[o * k_extent + k], scaled by
// scales[(o / outer_per_scale) * ceil(K / 128) + k / 128]. The block tile reads outer [outer_begin, +kTile);
// elements at outer >= outer_end read as 0 (they only feed outputs that are not stored).
struct OperandSource {
  const uint8_t* values;
  const float* scales;
  int64_t outer_per_scale;  // 1: 1x128 tiles (x); 128: 128x128 blocks (W)
  int64_t outer_begin;
  int64_t outer_end;
};

// e4m3_to_float(bits) (framework/core/dtype.cc; every e4m3 value is exact in fp16).
__device__ inline float e4m3_value(uint8_t bits) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E4M3)));
}

__device__ inline float dequantized(const OperandSource& source, int64_t outer, int64_t depth, int64_t k) {
  if (outer >= source.outer_end) return 0.0f;
  int64_t k_blocks = (k + kScaleDepth - 1) / kScaleDepth;
  float scale = source.scales[(outer / source.outer_per_scale) * k_blocks + depth / kScaleDepth];
  return __fmul_rn(e4m3_value(source.values[outer * k + depth]), scale);
}

// The block's first output row (A) or column (B) of this thread's 4.
__device__ inline int thread_row() { return static_cast<int>(threadIdx.x) / 16 * 4; }
__device__ inline int thread_column() { return static_cast<int>(threadIdx.x) % 16 * 4; }

// tile[d][o] <- dequant(operand)(outer_begin + o, depth_begin + d) for d < depth; consecutive threads read
// consecutive depths of one row.
__device__ inline void load_slice(float (&tile)[kDepth][kTile + 1], const OperandSource& source,
                                  int64_t depth_begin, int depth, int64_t k) {
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kDepth; i += kThreads) {
    int outer = i / kDepth, d = i % kDepth;
    if (d < depth) tile[d][outer] = dequantized(source, source.outer_begin + outer, depth_begin + d, k);
  }
}

// sums[i][j] <- the CPU's sum over k of A'(thread_row() + i, k) * B'(thread_column() + j, k).
__device__ inline void multiply_tiles(float (&sums)[4][4], const OperandSource& a, const OperandSource& b,
                                      int64_t k) {
  __shared__ float a_tile[kDepth][kTile + 1];  // [depth, rows] dequantised, padded against bank conflicts
  __shared__ float b_tile[kDepth][kTile + 1];  // [depth, columns]
  for (auto& row : sums) {
    for (float& sum : row) sum = 0.0f;
  }
  int row = thread_row(), column = thread_column();
  for (int64_t depth_begin = 0; depth_begin < k; depth_begin += kDepth) {
    int depth = static_cast<int>(k - depth_begin < kDepth ? k - depth_begin : kDepth);
    load_slice(a_tile, a, depth_begin, depth, k);
    load_slice(b_tile, b, depth_begin, depth, k);
    __syncthreads();
    for (int d = 0; d < depth; ++d) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float a_value = a_tile[d][row + i];
#pragma unroll
        for (int j = 0; j < 4; ++j) sums[i][j] = __fadd_rn(sums[i][j], __fmul_rn(a_value, b_tile[d][column + j]));
      }
    }
    __syncthreads();
  }
}

}  // namespace hai::cuda::kernels::fp8_exact
