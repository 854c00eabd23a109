#pragma once
// The SIMT fallback of the grouped GEMM (fp32 and fp16 inputs, or bf16 of shapes or alignments the tensor-core path
// does not take): a 64 x 64 fp32 block tile of op(A) @ op(B), 256 threads of 4 x 4 outputs, operands read element by
// element (any strides), staged 16 deep in shared memory as fp32, products by fp32 FMA.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::simt {

inline constexpr int kTile = 64;
inline constexpr int kDepth = 16;
inline constexpr int kThreads = 256;

__device__ inline float to_float(float value) { return value; }
__device__ inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
__device__ inline float to_float(__half value) { return __half2float(value); }

// Element (outer o, depth d) of one operand is origin[o * outer_stride + d * depth_stride]; elements with
// o >= outer_limit or d >= depth_limit read as 0.
template <typename Element>
struct OperandSource {
  const Element* origin;
  int64_t outer_stride;
  int64_t depth_stride;
  int64_t outer_limit;
  int64_t depth_limit;

  __device__ float at(int64_t outer, int64_t depth) const {
    if (outer >= outer_limit || depth >= depth_limit) return 0.0f;
    return to_float(origin[outer * outer_stride + depth * depth_stride]);
  }
};

// This thread's 4 x 4 outputs sit at rows (threadIdx.x / 16) * 4 + i, columns (threadIdx.x % 16) * 4 + j.
__device__ inline int thread_row() { return static_cast<int>(threadIdx.x) / 16 * 4; }
__device__ inline int thread_column() { return static_cast<int>(threadIdx.x) % 16 * 4; }

// accumulators (zeroed here) <- op(A) tile @ op(B) tile over depth [0, depth).
template <typename Element>
__device__ inline void multiply_tiles(float (&accumulators)[4][4], const OperandSource<Element>& a,
                                      const OperandSource<Element>& b, int64_t depth) {
  __shared__ float a_tile[kDepth][kTile];  // [depth, outer]
  __shared__ float b_tile[kDepth][kTile];
  for (auto& row : accumulators) {
    for (float& value : row) value = 0.0f;
  }
  int row = thread_row(), column = thread_column();
  for (int64_t depth_begin = 0; depth_begin < depth; depth_begin += kDepth) {
    for (int i = static_cast<int>(threadIdx.x); i < kDepth * kTile; i += kThreads) {
      int d = i / kTile, o = i % kTile;
      a_tile[d][o] = a.at(o, depth_begin + d);
      b_tile[d][o] = b.at(o, depth_begin + d);
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          accumulators[i][j] = fmaf(a_tile[d][row + i], b_tile[d][column + j], accumulators[i][j]);
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace hai::cuda::kernels::simt
