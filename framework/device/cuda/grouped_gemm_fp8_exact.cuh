#pragma once
// The exact main loop of the FP8 grouped GEMMs (SIMT, any device, shape and alignment): a 64 x 64 block tile of
// dequant(A) @ dequant(B)^T with the CPU reference's operations in its order (framework/device/fp8_gemm.h), so the
// results are its bits: every element dequantised by one rounded multiply (e4m3 value * scale), then per output
// sum = 0; sum = sum + a'[k] * b'[k] for k = k_begin, k_begin + 1, ..., k_end - 1, each product and each add rounded
// on its own (__fmul_rn / __fadd_rn: never contracted into an FMA). 32-deep slices of both operands are dequantised
// into shared memory; each of 256 threads keeps 4 x 4 sums. An operand is a Source with
//   float dequantized(int outer, int64_t k): its element (outer_begin + outer, k) dequantised, 0 past its outer end;
// OperandSource (below) is the forward's; the weight gradient has its own (grouped_gemm_fp8_weight_grad_exact.cu).

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::fp8_exact {

inline constexpr int kTile = 64;
inline constexpr int kDepth = 32;     // reduction per shared-memory slice
inline constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each
inline constexpr int kScaleDepth = 128;

// e4m3_to_float(bits) (framework/core/dtype.cc; every e4m3 value is exact in fp16).
__device__ inline float e4m3_value(uint8_t bits) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E4M3)));
}

// One e4m3 operand [outer, K], K-major: element (outer o, k) of the whole matrix is values[o * K + k], scaled by
// scales[(o / outer_per_scale) * ceil(K / 128) + k / 128]. The block tile reads outer [outer_begin, +kTile);
// elements at outer >= outer_end read as 0 (they only feed outputs that are not stored).
struct OperandSource {
  const uint8_t* values;
  const float* scales;
  int64_t outer_per_scale;  // 1: 1x128 tiles (x); 128: 128x128 blocks (W)
  int64_t outer_begin;
  int64_t outer_end;
  int64_t k;                // K

  __device__ float dequantized(int tile_outer, int64_t depth) const {
    int64_t outer = outer_begin + tile_outer;
    if (outer >= outer_end) return 0.0f;
    int64_t k_blocks = (k + kScaleDepth - 1) / kScaleDepth;
    float scale = scales[(outer / outer_per_scale) * k_blocks + depth / kScaleDepth];
    return __fmul_rn(e4m3_value(values[outer * k + depth]), scale);
  }
};

// The block's first output row (A) or column (B) of this thread's 4.
__device__ inline int thread_row() { return static_cast<int>(threadIdx.x) / 16 * 4; }
__device__ inline int thread_column() { return static_cast<int>(threadIdx.x) % 16 * 4; }

// tile[d][o] <- dequant(operand)(outer_begin + o, depth_begin + d) for d < depth; consecutive threads read
// consecutive depths of one row.
template <typename Source>
__device__ inline void load_slice(float (&tile)[kDepth][kTile + 1], const Source& source, int64_t depth_begin,
                                  int depth) {
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kDepth; i += kThreads) {
    int outer = i / kDepth, d = i % kDepth;
    if (d < depth) tile[d][outer] = source.dequantized(outer, depth_begin + d);
  }
}

// sums[i][j] <- the CPU's sum over k in [k_begin, k_end) of A'(thread_row() + i, k) * B'(thread_column() + j, k).
template <typename Source>
__device__ inline void multiply_tiles(float (&sums)[4][4], const Source& a, const Source& b, int64_t k_begin,
                                      int64_t k_end) {
  __shared__ float a_tile[kDepth][kTile + 1];  // [depth, rows] dequantised, padded against bank conflicts
  __shared__ float b_tile[kDepth][kTile + 1];  // [depth, columns]
  for (auto& row : sums) {
    for (float& sum : row) sum = 0.0f;
  }
  int row = thread_row(), column = thread_column();
  for (int64_t depth_begin = k_begin; depth_begin < k_end; depth_begin += kDepth) {
    int depth = static_cast<int>(k_end - depth_begin < kDepth ? k_end - depth_begin : kDepth);
    load_slice(a_tile, a, depth_begin, depth);
    load_slice(b_tile, b, depth_begin, depth);
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
