// Causal attention forward on tensor cores (flash-attention 2 style): a block of 4 warps owns 128 query rows of one
// (b, h), each warp 32 of them (two 16-row tiles sharing every k and v fragment it loads); it walks the 64-key
// tiles up to the diagonal, keeping an online softmax in fp32 registers, and writes out and the log-sum-exp once.
// bf16 q, k, v; P is rounded to bf16 for the P V product.

#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/attention_mma.cuh"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/attention_widths.cuh"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using attention_mma::Accumulator;
using attention_tiles::HeadRows;
using attention_tiles::stride_of;

constexpr int kWarps = 4;
constexpr int kRowTiles = 2;                        // 16-row tiles per warp
constexpr int kQueries = kWarps * kRowTiles * 16;   // query rows per block
constexpr int kKeys = 64;                           // keys per step
constexpr int kKeyTiles = kKeys / 8;
constexpr float kLog2E = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int qk_width, int v_width>
constexpr int forward_shared_bytes() {
  return ((kQueries + kKeys) * stride_of(qk_width) + kKeys * stride_of(v_width)) *
         static_cast<int>(sizeof(__nv_bfloat16));
}

// The running softmax of the two rows (group and group + 8 of the warp's 16) that this thread holds a part of.
struct RowSoftmax {
  float max[2] = {-INFINITY, -INFINITY};  // in log2 units (scores times softmax_scale * log2 e)
  float sum[2] = {0.0f, 0.0f};            // this thread's part of the row sums
};

// Turns the scores of one key tile for one 16-row tile into probabilities relative to the updated running maximum,
// masks keys after the query (on tiles that reach the diagonal), and rescales the output accumulators by
// exp2(old max - new max).
template <int v_tiles>
__device__ inline void online_softmax_step(Accumulator (&scores)[kKeyTiles], Accumulator (&out)[v_tiles],
                                           RowSoftmax& softmax, float scale_log2, bool diagonal, int64_t query_low,
                                           int64_t first_key) {
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int64_t query = query_low + 8 * half;
    float tile_max = -INFINITY;
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        int64_t key = first_key + 8 * n + 2 * (lane % 4) + i;
        float& score = scores[n].value[2 * half + i];
        score = diagonal && key > query ? -INFINITY : score * scale_log2;
        tile_max = fmaxf(tile_max, score);
      }
    }
    // NOTE: key tile 0 comes first and key 0 <= every query, so the running max is finite from then on (a later
    // tile entirely after a row's query leaves it unchanged and adds exp2(-inf) = 0).
    float new_max = fmaxf(softmax.max[half], quad_max(tile_max));
    float rescale = exp2f(softmax.max[half] - new_max);
    softmax.max[half] = new_max;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float& score = scores[n].value[2 * half + i];
        score = exp2f(score - new_max);
        sum += score;
      }
    }
    softmax.sum[half] = softmax.sum[half] * rescale + sum;
#pragma unroll
    for (int n = 0; n < v_tiles; ++n) {
      out[n].value[2 * half] *= rescale;
      out[n].value[2 * half + 1] *= rescale;
    }
  }
}

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kWarps * 32)
    attention_forward_kernel(void* out, bool bf16_out, float* lse, const __nv_bfloat16* q, const __nv_bfloat16* k,
                             const __nv_bfloat16* v, AttentionGeometry geometry) {
  constexpr int qk_chunks = qk_width / 16, v_tiles = v_width / 8;
  extern __shared__ __align__(16) unsigned char shared[];
  __nv_bfloat16* q_tile = reinterpret_cast<__nv_bfloat16*>(shared);  // [128, qk_width]
  __nv_bfloat16* k_tile = q_tile + kQueries * stride_of(qk_width);     // [64, qk_width]
  __nv_bfloat16* v_tile = k_tile + kKeys * stride_of(qk_width);        // [64, v_width]

  // Diagonal-heavy blocks (the last query tiles) first.
  const int query_tile = gridDim.x - 1 - blockIdx.x;
  const int64_t batch_index = blockIdx.y / geometry.heads, head = blockIdx.y % geometry.heads;
  const int64_t sequence = geometry.sequence;
  HeadRows<const __nv_bfloat16> q_rows = attention_tiles::head_rows(q, batch_index, head, sequence, geometry.heads,
                                                                    geometry.qk_dim);
  HeadRows<const __nv_bfloat16> k_rows = attention_tiles::head_rows(k, batch_index, head, sequence, geometry.heads,
                                                                    geometry.qk_dim);
  HeadRows<const __nv_bfloat16> v_rows = attention_tiles::head_rows(v, batch_index, head, sequence, geometry.heads,
                                                                    geometry.v_dim);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t first_query = static_cast<int64_t>(query_tile) * kQueries;
  const int warp_row0 = kRowTiles * 16 * warp;  // this warp's first row in the block
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  // Key tiles up to the one holding the block's last query (or the sequence's last key); those from
  // first_query / kKeys on reach the diagonal of some row.
  const int64_t sequence_key_tiles = (sequence + kKeys - 1) / kKeys;
  const int64_t block_key_tiles = (first_query + kQueries) / kKeys;
  const int key_tiles = static_cast<int>(block_key_tiles < sequence_key_tiles ? block_key_tiles : sequence_key_tiles);
  const int first_diagonal_tile = static_cast<int>(first_query / kKeys);

  attention_tiles::load_tile_async<kQueries, qk_width>(q_tile, q_rows, first_query);
  attention_tiles::load_tile_async<kKeys, qk_width>(k_tile, k_rows, 0);
  attention_mma::commit_async_copies();
  attention_tiles::load_tile_async<kKeys, v_width>(v_tile, v_rows, 0);
  attention_mma::commit_async_copies();

  Accumulator out_tiles[kRowTiles][v_tiles];  // [32, v_width] of this warp
  attention_mma::zero(out_tiles);
  RowSoftmax softmax[kRowTiles];
  for (int key_tile = 0; key_tile < key_tiles; ++key_tile) {
    const bool last = key_tile == key_tiles - 1;
    attention_mma::wait_async_copies<1>();  // q and this k tile; v may still be in flight
    __syncthreads();
    Accumulator scores[kRowTiles][kKeyTiles];  // [32, 64]
    attention_mma::zero(scores);
    attention_mma::multiply_by_rows<kRowTiles, qk_chunks, kKeyTiles>(scores, q_tile, stride_of(qk_width), warp_row0,
                                                                     k_tile, stride_of(qk_width));
    __syncthreads();  // every warp is done with k_tile
    if (!last) {
      attention_tiles::load_tile_async<kKeys, qk_width>(k_tile, k_rows, int64_t{key_tile + 1} * kKeys);
      attention_mma::commit_async_copies();
    }
#pragma unroll
    for (int m = 0; m < kRowTiles; ++m) {
      online_softmax_step(scores[m], out_tiles[m], softmax[m], scale_log2, key_tile >= first_diagonal_tile,
                          first_query + warp_row0 + 16 * m + lane / 4, int64_t{key_tile} * kKeys);
    }
    if (last) {
      attention_mma::wait_async_copies<0>();
    } else {
      attention_mma::wait_async_copies<1>();  // this v tile; the next k tile may still be in flight
    }
    __syncthreads();
    attention_mma::multiply_accumulators_by_tile<kRowTiles, kKeys / 16, v_tiles>(out_tiles, scores, v_tile,
                                                                                 stride_of(v_width));
    __syncthreads();  // every warp is done with v_tile
    if (!last) {
      attention_tiles::load_tile_async<kKeys, v_width>(v_tile, v_rows, int64_t{key_tile + 1} * kKeys);
      attention_mma::commit_async_copies();
    }
  }

  HeadRows<float> out_rows = attention_tiles::head_rows(static_cast<float*>(out), batch_index, head, sequence,
                                                        geometry.heads, geometry.v_dim);
  HeadRows<__nv_bfloat16> bf16_out_rows = attention_tiles::head_rows(static_cast<__nv_bfloat16*>(out), batch_index,
                                                                     head, sequence, geometry.heads, geometry.v_dim);
  float* head_lse = lse + (batch_index * geometry.heads + head) * sequence;
#pragma unroll
  for (int m = 0; m < kRowTiles; ++m) {
    float row_sum[2] = {quad_sum(softmax[m].sum[0]), quad_sum(softmax[m].sum[1])};
    int64_t row0 = first_query + warp_row0 + 16 * m;
    if (bf16_out) {
      attention_tiles::store_rows(bf16_out_rows, row0, out_tiles[m], 1.0f / row_sum[0], 1.0f / row_sum[1]);
    } else {
      attention_tiles::store_rows(out_rows, row0, out_tiles[m], 1.0f / row_sum[0], 1.0f / row_sum[1]);
    }
    for (int half = 0; half < 2 && lane % 4 == 0; ++half) {
      int64_t query = row0 + lane / 4 + 8 * half;
      if (query < sequence) head_lse[query] = (softmax[m].max[half] + log2f(row_sum[half])) * kLn2;
    }
  }
}

}  // namespace

cudaError_t attention_forward_bf16(void* out, bool bf16_out, float* lse, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, const AttentionGeometry& geometry, cudaStream_t stream) {
  bool wgmma = false;
  cudaError_t wgmma_status = attention_wgmma_applies(geometry, &wgmma);
  if (wgmma_status != cudaSuccess) return wgmma_status;
  if (wgmma) return attention_forward_bf16_wgmma(out, bf16_out, lse, q, {k, v}, geometry, stream);
  return attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    auto kernel = attention_forward_kernel<qk, vw>;
    constexpr int shared_bytes = forward_shared_bytes<qk, vw>();
    cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
    if (status != cudaSuccess) return status;
    dim3 grid(static_cast<unsigned int>((geometry.sequence + kQueries - 1) / kQueries),
              static_cast<unsigned int>(geometry.batch * geometry.heads));
    kernel<<<grid, kWarps * 32, shared_bytes, stream>>>(
        out, bf16_out, lse, reinterpret_cast<const __nv_bfloat16*>(q), reinterpret_cast<const __nv_bfloat16*>(k),
        reinterpret_cast<const __nv_bfloat16*>(v), geometry);
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
