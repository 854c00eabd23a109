#pragma once
// Tiles of [B, S, H, d] rows in shared memory for the bf16 attention kernels: `rows` consecutive sequence positions
// of one (b, h), padded to `width` columns (a multiple of 16) with zeros, and zero rows past the sequence end, so
// that padding adds nothing to any product.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/attention_mma.cuh"

namespace hai::cuda::kernels::attention_tiles {

// Row stride of a shared tile of `width` columns: 8 extra elements put consecutive rows 4 banks apart, so the eight
// row addresses of an ldmatrix hit different banks.
__host__ __device__ constexpr int stride_of(int width) { return width + 8; }

// Where rows of one (b, h) live in a [B, S, H, dim] tensor: row s at base + s * pitch.
template <typename Element>
struct HeadRows {
  Element* base;   // row 0 of this (b, h)
  int64_t pitch;   // H * dim
  int dim;         // valid columns
  int64_t valid;   // S: rows at or past it are zero in tiles
};

template <typename Element>
__device__ inline HeadRows<Element> head_rows(Element* tensor, int64_t batch_index, int64_t head, int64_t sequence,
                                              int64_t heads, int dim) {
  return {tensor + ((batch_index * sequence) * heads + head) * dim, heads * dim, dim, sequence};
}

// Where the backward kernels read each query's lse and D = rowsum(d_out o) of one (b, h): D of row r of [B, S, H]
// at dots[r * dots_stride] (attention_output_dots; attention_backward keeps it in d_q's first column).
struct QueryStatRows {
  const float* lse;         // [S] of this (b, h)
  const float* output_dot;  // D[s] at output_dot[s * output_dot_pitch]
  int64_t output_dot_pitch;

  __device__ float lse_log2(int64_t query) const { return lse[query] * 1.4426950408889634f; }
  __device__ float dot(int64_t query) const { return output_dot[query * output_dot_pitch]; }
};

__device__ inline QueryStatRows query_stat_rows(const float* dots, int64_t dots_stride, const float* lse,
                                                const AttentionGeometry& geometry, int64_t batch_index,
                                                int64_t head) {
  int64_t sequence = geometry.sequence, heads = geometry.heads;
  return {lse + (batch_index * heads + head) * sequence, dots + (batch_index * sequence * heads + head) * dots_stride,
          heads * dots_stride};
}

// The operands of one (b, h) that the backward kernels read, as rows, and the queries' statistics.
struct HeadOperands {
  HeadRows<const __nv_bfloat16> q, k, v, d_out;
  QueryStatRows stats;
};

__device__ inline HeadOperands head_operands(const float* d_q, const __nv_bfloat16* d_out, const __nv_bfloat16* q,
                                             const __nv_bfloat16* k, const __nv_bfloat16* v, const float* lse,
                                             const AttentionGeometry& geometry, int64_t batch_index, int64_t head) {
  int64_t sequence = geometry.sequence, heads = geometry.heads;
  return {head_rows(q, batch_index, head, sequence, heads, geometry.qk_dim),
          head_rows(k, batch_index, head, sequence, heads, geometry.qk_dim),
          head_rows(v, batch_index, head, sequence, heads, geometry.v_dim),
          head_rows(d_out, batch_index, head, sequence, heads, geometry.v_dim),
          query_stat_rows(d_q, geometry.qk_dim, lse, geometry, batch_index, head)};
}

// This thread's value of the `queries` rows from first_query on, for a key kernel's shared row stats: threads
// 0 .. queries - 1 the lse (log2 units) of query first_query + t, the next `queries` threads its D; 0 past the
// sequence end and for the other threads.
template <int queries>
__device__ inline float query_row_stat(const QueryStatRows& stats, int64_t first_query, int64_t sequence) {
  int t = static_cast<int>(threadIdx.x);
  int64_t query = first_query + t % queries;
  if (t >= 2 * queries || query >= sequence) return 0.0f;
  return t < queries ? stats.lse_log2(query) : stats.dot(query);
}

// Starts copying rows first .. first + rows - 1 of `source` into `tile` (cp.async; commit and wait separately).
template <int rows, int width>
__device__ inline void load_tile_async(__nv_bfloat16* tile, const HeadRows<const __nv_bfloat16>& source,
                                       int64_t first) {
  constexpr int pieces_per_row = width / 8;  // 16-byte pieces
  for (int piece = threadIdx.x; piece < rows * pieces_per_row; piece += blockDim.x) {
    int row = piece / pieces_per_row;
    int col = (piece % pieces_per_row) * 8;
    bool valid = first + row < source.valid && col < source.dim;
    const __nv_bfloat16* from = valid ? source.base + (first + row) * source.pitch + col : source.base;
    attention_mma::copy_16_bytes_async(tile + row * stride_of(width) + col, from, valid);
  }
}

__device__ inline void store_pair(float* target, float first, float second) {
  *reinterpret_cast<float2*>(target) = make_float2(first, second);
}
__device__ inline void store_pair(__nv_bfloat16* target, float first, float second) {
  *reinterpret_cast<__nv_bfloat162*>(target) = __floats2bfloat162_rn(first, second);
}

// Writes a warp's 16 x 8 n_tiles accumulators (rows row0 .., columns 0 ..) times `factor` to rows of an fp32 (or
// bf16: rounded once) tensor, skipping padding columns and rows past the sequence end.
template <int n_tiles, typename Element>
__device__ inline void store_rows(const HeadRows<Element>& target, int64_t row0,
                                  const attention_mma::Accumulator (&tiles)[n_tiles], float factor_low,
                                  float factor_high) {
  int lane = threadIdx.x % 32;
  int64_t row_low = row0 + lane / 4, row_high = row_low + 8;
#pragma unroll
  for (int n = 0; n < n_tiles; ++n) {
    int col = 8 * n + 2 * (lane % 4);
    if (col >= target.dim) continue;
    if (row_low < target.valid) {
      store_pair(target.base + row_low * target.pitch + col, tiles[n].value[0] * factor_low,
                 tiles[n].value[1] * factor_low);
    }
    if (row_high < target.valid) {
      store_pair(target.base + row_high * target.pitch + col, tiles[n].value[2] * factor_high,
                 tiles[n].value[3] * factor_high);
    }
  }
}

}  // namespace hai::cuda::kernels::attention_tiles
