#pragma once
// Warp-level tensor-core building blocks of the bf16 attention kernels (sm_80+), on mma_sm80.cuh's instructions:
// fragments of row-major shared-memory tiles and the tile products of attention (Q K^T, P V). Fragment layouts:
// mma_sm80.cuh. Shared-memory tiles are row-major bf16 with a row stride (in elements) that is a multiple of 8.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/mma_sm80.cuh"

namespace hai::cuda::kernels::attention_mma {

struct FragmentA {
  uint32_t reg[4];
};
struct FragmentB {
  uint32_t reg[2];
};
struct Accumulator {  // one 16x8 fp32 tile
  float value[4];
};

// The attention kernels' tile copies.
using sm80::commit_async_copies;
using sm80::copy_16_bytes_async;
using sm80::wait_async_copies;

// A = M[row0.., col0..] (16x16) of a row-major tile M.
__device__ inline FragmentA load_a(const __nv_bfloat16* tile, int stride, int row0, int col0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = row0 + lane % 8 + (matrix & 1) * 8;
  int col = col0 + (matrix >> 1) * 8;
  FragmentA a;
  sm80::load_matrix_x4(a.reg, tile + row * stride + col);
  return a;
}

// Two B fragments (n tiles n0 and n0 + 8) with B[k][n] = M[n0 + n][k0 + k]: M holds B transposed ([n][k]).
__device__ inline void load_b_pair_from_rows(FragmentB& first, FragmentB& second, const __nv_bfloat16* tile,
                                             int stride, int n0, int k0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = n0 + lane % 8 + (matrix >> 1) * 8;
  int col = k0 + (matrix & 1) * 8;
  uint32_t reg[4];
  sm80::load_matrix_x4(reg, tile + row * stride + col);
  first.reg[0] = reg[0], first.reg[1] = reg[1], second.reg[0] = reg[2], second.reg[1] = reg[3];
}

// Two B fragments (n tiles n0 and n0 + 8) with B[k][n] = M[k0 + k][n0 + n]: M holds B as it is ([k][n]).
__device__ inline void load_b_pair_from_columns(FragmentB& first, FragmentB& second, const __nv_bfloat16* tile,
                                                int stride, int k0, int n0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = k0 + lane % 8 + (matrix & 1) * 8;
  int col = n0 + (matrix >> 1) * 8;
  uint32_t reg[4];
  sm80::load_matrix_x4_transposed(reg, tile + row * stride + col);
  first.reg[0] = reg[0], first.reg[1] = reg[1], second.reg[0] = reg[2], second.reg[1] = reg[3];
}

// c += a @ b
__device__ inline void mma(Accumulator& c, const FragmentA& a, const FragmentB& b) {
  sm80::mma_bf16_16x8x16(c.value, a.reg, b.reg[0], b.reg[1]);
}

__device__ inline uint32_t pack_bf16(float low, float high) {
  __nv_bfloat162 packed = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<uint32_t*>(&packed);
}

// The A fragment of columns 16 c .. 16 c + 15 of a 16-row product held as accumulators (n tiles 2c and 2c + 1),
// rounded to bf16: a product's C layout is the next product's A layout.
__device__ inline FragmentA accumulators_as_a(const Accumulator& left, const Accumulator& right) {
  FragmentA a;
  a.reg[0] = pack_bf16(left.value[0], left.value[1]);
  a.reg[1] = pack_bf16(left.value[2], left.value[3]);
  a.reg[2] = pack_bf16(right.value[0], right.value[1]);
  a.reg[3] = pack_bf16(right.value[2], right.value[3]);
  return a;
}

template <int rows, int count>
__device__ inline void zero(Accumulator (&tiles)[rows][count]) {
#pragma unroll
  for (int r = 0; r < rows; ++r) {
#pragma unroll
    for (int i = 0; i < count; ++i) tiles[r][i].value[0] = tiles[r][i].value[1] = tiles[r][i].value[2] = tiles[r][i].value[3] = 0.0f;
  }
}

// out[16 m_tiles x 8 n_tiles] += A[16 m_tiles x 16 k_chunks] (row-major tile, rows row0..) @ B, B[k][n] =
// rows_tile[n][k] (both tiles in shared memory): the product of a tile with another tile's transpose, e.g. Q K^T.
// Each B fragment loaded serves all m_tiles row tiles.
template <int m_tiles, int k_chunks, int n_tiles>
__device__ inline void multiply_by_rows(Accumulator (&out)[m_tiles][n_tiles], const __nv_bfloat16* a_tile,
                                        int a_stride, int row0, const __nv_bfloat16* rows_tile, int rows_stride) {
  static_assert(n_tiles % 2 == 0, "n tiles come in pairs");
#pragma unroll
  for (int k = 0; k < k_chunks; ++k) {
    FragmentA a[m_tiles];
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) a[m] = load_a(a_tile, a_stride, row0 + 16 * m, 16 * k);
#pragma unroll
    for (int n = 0; n < n_tiles; n += 2) {
      FragmentB first, second;
      load_b_pair_from_rows(first, second, rows_tile, rows_stride, 8 * n, 16 * k);
#pragma unroll
      for (int m = 0; m < m_tiles; ++m) {
        mma(out[m][n], a[m], first);
        mma(out[m][n + 1], a[m], second);
      }
    }
  }
}

// out[16 m_tiles x 8 n_tiles] += P[16 m_tiles x 16 k_chunks] @ M[.., 0 .. 8 n_tiles], P given as accumulators
// (rounded to bf16) and M a row-major tile in shared memory: e.g. P V.
template <int m_tiles, int k_chunks, int n_tiles>
__device__ inline void multiply_accumulators_by_tile(Accumulator (&out)[m_tiles][n_tiles],
                                                     const Accumulator (&p)[m_tiles][2 * k_chunks],
                                                     const __nv_bfloat16* tile, int stride) {
  static_assert(n_tiles % 2 == 0, "n tiles come in pairs");
#pragma unroll
  for (int k = 0; k < k_chunks; ++k) {
    FragmentA a[m_tiles];
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) a[m] = accumulators_as_a(p[m][2 * k], p[m][2 * k + 1]);
#pragma unroll
    for (int n = 0; n < n_tiles; n += 2) {
      FragmentB first, second;
      load_b_pair_from_columns(first, second, tile, stride, 16 * k, 8 * n);
#pragma unroll
      for (int m = 0; m < m_tiles; ++m) {
        mma(out[m][n], a[m], first);
        mma(out[m][n + 1], a[m], second);
      }
    }
  }
}

}  // namespace hai::cuda::kernels::attention_mma
