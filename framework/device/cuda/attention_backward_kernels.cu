// Causal attention backward on tensor cores, flash-attention 2 style but without atomics: two kernels recompute the
// probabilities P = exp(score - lse) tile by tile (no S x S buffer), so every gradient row is written by exactly one
// block and the results are deterministic.
//   key kernel:   a block owns 64 keys of one (b, h) (16 per warp) and walks the 32-query tiles from the diagonal
//                 on: d_v += P^T d_out, dS^T = P^T o (V d_out^T - D), d_k += dS^T q.
//   query kernel: a block owns 64 queries (16 per warp) and walks the 32-key tiles up to the diagonal:
//                 dS = P o (d_out V^T - D), d_q += dS k.
// Both double-buffer the tiles they walk: the next tile's cp.async copies (and, in the key kernel, its lse and D
// loads) are in flight while the current tile is multiplied. D[i] = dot(d_out[i], out[i]) was stored by
// attention_output_dots in d_q's first column, with d_out rounded to bf16; the key kernel runs first and the query
// kernel reads its own rows' D before overwriting them. P and dS are rounded to bf16 for the tensor-core products;
// everything accumulates in fp32.

#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/attention_mma.cuh"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/attention_widths.cuh"

namespace hai::cuda::kernels {
namespace {

using attention_mma::Accumulator;
using attention_tiles::HeadOperands;
using attention_tiles::HeadRows;
using attention_tiles::stride_of;

constexpr int kWarps = 4;
constexpr int kOwnedRows = 16 * kWarps;  // keys of a key block, queries of a query block
constexpr int kKeyKernelQueries = 32;    // queries per step of the key kernel
constexpr int kQueryKernelKeys = 32;     // keys per step of the query kernel
constexpr float kLog2E = 1.4426950408889634f;

// probability = exp(score * scale - lse) in log2 units, 0 where the key comes after the query or the query is past
// the sequence end.
__device__ inline float probability(float score, float scale_log2, float lse_log2, int64_t key, int64_t query,
                                    int64_t sequence) {
  return key > query || query >= sequence ? 0.0f : exp2f(score * scale_log2 - lse_log2);
}

// The 32-query tiles the key kernel walks, two stages: per stage q [32, qk_width] and d_out [32, v_width] in bf16,
// then per stage the rows' lse (log2 units) and D.
template <int qk_width, int v_width>
struct KeyKernelStages {
  static constexpr int kTileElements = kKeyKernelQueries * (stride_of(qk_width) + stride_of(v_width));
  __nv_bfloat16* tiles;  // [2][kTileElements]
  float* row_stats;      // [2][2 * kKeyKernelQueries]: lse_log2, then D

  __device__ __nv_bfloat16* q(int stage) const { return tiles + stage * kTileElements; }
  __device__ __nv_bfloat16* d_out(int stage) const { return q(stage) + kKeyKernelQueries * stride_of(qk_width); }
  __device__ float* lse_log2(int stage) const { return row_stats + stage * 2 * kKeyKernelQueries; }
  __device__ float* output_dot(int stage) const { return lse_log2(stage) + kKeyKernelQueries; }
};

template <int qk_width, int v_width>
constexpr int key_kernel_shared_bytes() {
  constexpr int tile_elements =
      kOwnedRows * (stride_of(qk_width) + stride_of(v_width)) + 2 * KeyKernelStages<qk_width, v_width>::kTileElements;
  return tile_elements * static_cast<int>(sizeof(__nv_bfloat16)) +
         2 * 2 * kKeyKernelQueries * static_cast<int>(sizeof(float));
}

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kWarps * 32)
    attention_key_gradients_kernel(float* d_k, float* d_v, const float* d_q, const __nv_bfloat16* d_out,
                                   const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                   const float* lse, AttentionGeometry geometry) {
  constexpr int qk_chunks = qk_width / 16, v_chunks = v_width / 16;
  constexpr int qk_tiles = qk_width / 8, v_tiles = v_width / 8, query_tiles = kKeyKernelQueries / 8;
  using Stages = KeyKernelStages<qk_width, v_width>;
  extern __shared__ __align__(16) unsigned char shared[];
  __nv_bfloat16* k_tile = reinterpret_cast<__nv_bfloat16*>(shared);  // [64, qk_width]
  __nv_bfloat16* v_tile = k_tile + kOwnedRows * stride_of(qk_width);  // [64, v_width]
  __nv_bfloat16* stage_tiles = v_tile + kOwnedRows * stride_of(v_width);
  const Stages stages{stage_tiles, reinterpret_cast<float*>(stage_tiles + 2 * Stages::kTileElements)};

  const int64_t batch_index = blockIdx.y / geometry.heads, head = blockIdx.y % geometry.heads;
  const int64_t sequence = geometry.sequence;
  HeadOperands operands = attention_tiles::head_operands(d_q, d_out, q, k, v, lse, geometry, batch_index, head);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t first_key = int64_t{blockIdx.x} * kOwnedRows;
  const int64_t key_low = first_key + 16 * warp + lane / 4;  // this thread's rows: key_low and key_low + 8
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  auto load_query_tile = [&](int stage, int64_t first_query) {
    attention_tiles::load_tile_async<kKeyKernelQueries, qk_width>(stages.q(stage), operands.q, first_query);
    attention_tiles::load_tile_async<kKeyKernelQueries, v_width>(stages.d_out(stage), operands.d_out, first_query);
    attention_mma::commit_async_copies();
  };

  // Prologue: K, V and the first query tile in one group of copies.
  attention_tiles::load_tile_async<kOwnedRows, qk_width>(k_tile, operands.k, first_key);
  attention_tiles::load_tile_async<kOwnedRows, v_width>(v_tile, operands.v, first_key);
  load_query_tile(0, first_key);
  if (threadIdx.x < 2 * kKeyKernelQueries) {
    stages.lse_log2(0)[threadIdx.x] =
        attention_tiles::query_row_stat<kKeyKernelQueries>(operands.stats, first_key, sequence);
  }

  Accumulator d_k_tiles[1][qk_tiles], d_v_tiles[1][v_tiles];  // [16, qk_width], [16, v_width] of this warp
  attention_mma::zero(d_k_tiles);
  attention_mma::zero(d_v_tiles);
  int stage = 0;
  for (int64_t first_query = first_key; first_query < sequence; first_query += kKeyKernelQueries, stage ^= 1) {
    // Steady state: start the next tile's copies and loads, then wait for this tile's.
    const int64_t next_query = first_query + kKeyKernelQueries;
    const bool has_next = next_query < sequence;
    float next_stat = 0.0f;
    if (has_next) {
      load_query_tile(stage ^ 1, next_query);
      next_stat = attention_tiles::query_row_stat<kKeyKernelQueries>(operands.stats, next_query, sequence);
      attention_mma::wait_async_copies<1>();
    } else {
      attention_mma::wait_async_copies<0>();
    }
    __syncthreads();
    const __nv_bfloat16* q_tile = stages.q(stage);          // [32, qk_width]
    const __nv_bfloat16* d_out_tile = stages.d_out(stage);  // [32, v_width]
    const float* lse_log2 = stages.lse_log2(stage);         // [32]
    const float* output_dot = stages.output_dot(stage);     // [32]

    Accumulator transposed_p[1][query_tiles];  // P^T [16 keys, 32 queries]
    attention_mma::zero(transposed_p);
    attention_mma::multiply_by_rows<1, qk_chunks, query_tiles>(transposed_p, k_tile, stride_of(qk_width), 16 * warp,
                                                            q_tile, stride_of(qk_width));
    Accumulator transposed_d_p[1][query_tiles];  // (d_out V^T)^T [16 keys, 32 queries]
    attention_mma::zero(transposed_d_p);
    attention_mma::multiply_by_rows<1, v_chunks, query_tiles>(transposed_d_p, v_tile, stride_of(v_width), 16 * warp,
                                                           d_out_tile, stride_of(v_width));
#pragma unroll
    for (int n = 0; n < query_tiles; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int column = 8 * n + 2 * (lane % 4) + e % 2;
        int64_t key = key_low + 8 * (e / 2), query = first_query + column;
        float p = probability(transposed_p[0][n].value[e], scale_log2, lse_log2[column], key, query, sequence);
        transposed_p[0][n].value[e] = p;
        transposed_d_p[0][n].value[e] = p * (transposed_d_p[0][n].value[e] - output_dot[column]);  // dS^T
      }
    }
    attention_mma::multiply_accumulators_by_tile<1, kKeyKernelQueries / 16, v_tiles>(d_v_tiles, transposed_p,
                                                                                  d_out_tile, stride_of(v_width));
    attention_mma::multiply_accumulators_by_tile<1, kKeyKernelQueries / 16, qk_tiles>(d_k_tiles, transposed_d_p,
                                                                                   q_tile, stride_of(qk_width));
    // NOTE: the other stage's row stats were last read before the previous iteration's closing barrier.
    if (has_next && threadIdx.x < 2 * kKeyKernelQueries) stages.lse_log2(stage ^ 1)[threadIdx.x] = next_stat;
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  HeadRows<float> d_k_rows = attention_tiles::head_rows(d_k, batch_index, head, sequence, geometry.heads,
                                                        geometry.qk_dim);
  HeadRows<float> d_v_rows = attention_tiles::head_rows(d_v, batch_index, head, sequence, geometry.heads,
                                                        geometry.v_dim);
  float scale = geometry.softmax_scale;
  attention_tiles::store_rows(d_k_rows, first_key + 16 * warp, d_k_tiles[0], scale, scale);
  attention_tiles::store_rows(d_v_rows, first_key + 16 * warp, d_v_tiles[0], 1.0f, 1.0f);
}

// The 32-key tiles the query kernel walks, two stages: per stage k [32, qk_width] and v [32, v_width] in bf16.
template <int qk_width, int v_width>
__host__ __device__ constexpr int query_kernel_stage_elements() {
  return kQueryKernelKeys * (stride_of(qk_width) + stride_of(v_width));
}

template <int qk_width, int v_width>
constexpr int query_kernel_shared_bytes() {
  constexpr int tile_elements =
      kOwnedRows * (stride_of(qk_width) + stride_of(v_width)) + 2 * query_kernel_stage_elements<qk_width, v_width>();
  return tile_elements * static_cast<int>(sizeof(__nv_bfloat16));
}

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kWarps * 32)
    attention_query_gradients_kernel(float* d_q, const __nv_bfloat16* d_out, const __nv_bfloat16* q,
                                     const __nv_bfloat16* k, const __nv_bfloat16* v, const float* lse,
                                     AttentionGeometry geometry) {
  constexpr int qk_chunks = qk_width / 16, v_chunks = v_width / 16;
  constexpr int qk_tiles = qk_width / 8, key_tiles = kQueryKernelKeys / 8;
  constexpr int stage_elements = query_kernel_stage_elements<qk_width, v_width>();
  extern __shared__ __align__(16) unsigned char shared[];
  __nv_bfloat16* q_tile = reinterpret_cast<__nv_bfloat16*>(shared);      // [64, qk_width]
  __nv_bfloat16* d_out_tile = q_tile + kOwnedRows * stride_of(qk_width);  // [64, v_width]
  __nv_bfloat16* key_stages = d_out_tile + kOwnedRows * stride_of(v_width);
  auto k_stage = [&](int stage) { return key_stages + stage * stage_elements; };  // [32, qk_width]
  auto v_stage = [&](int stage) { return k_stage(stage) + kQueryKernelKeys * stride_of(qk_width); };  // [32, v_width]

  const int query_block = gridDim.x - 1 - blockIdx.x;  // diagonal-heavy blocks first
  const int64_t batch_index = blockIdx.y / geometry.heads, head = blockIdx.y % geometry.heads;
  const int64_t sequence = geometry.sequence;
  HeadOperands operands = attention_tiles::head_operands(d_q, d_out, q, k, v, lse, geometry, batch_index, head);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t first_query = int64_t{query_block} * kOwnedRows;
  const int64_t query_low = first_query + 16 * warp + lane / 4;  // this thread's rows: query_low and query_low + 8
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  auto load_key_tile = [&](int stage, int64_t first_key) {
    attention_tiles::load_tile_async<kQueryKernelKeys, qk_width>(k_stage(stage), operands.k, first_key);
    attention_tiles::load_tile_async<kQueryKernelKeys, v_width>(v_stage(stage), operands.v, first_key);
    attention_mma::commit_async_copies();
  };

  float lse_log2[2], output_dot[2];
  for (int half = 0; half < 2; ++half) {
    int64_t query = query_low + 8 * half;
    bool valid = query < sequence;
    lse_log2[half] = valid ? operands.stats.lse_log2(query) : 0.0f;
    output_dot[half] = valid ? operands.stats.dot(query) : 0.0f;
  }
  // Prologue: Q, d_out and the first key tile in one group of copies.
  attention_tiles::load_tile_async<kOwnedRows, qk_width>(q_tile, operands.q, first_query);
  attention_tiles::load_tile_async<kOwnedRows, v_width>(d_out_tile, operands.d_out, first_query);
  load_key_tile(0, 0);

  Accumulator d_q_tiles[1][qk_tiles];  // [16, qk_width] of this warp
  attention_mma::zero(d_q_tiles);
  const int64_t end_key = first_query + kOwnedRows < sequence ? first_query + kOwnedRows : sequence;
  int stage = 0;
  for (int64_t first_key = 0; first_key < end_key; first_key += kQueryKernelKeys, stage ^= 1) {
    const bool has_next = first_key + kQueryKernelKeys < end_key;
    if (has_next) {
      load_key_tile(stage ^ 1, first_key + kQueryKernelKeys);
      attention_mma::wait_async_copies<1>();
    } else {
      attention_mma::wait_async_copies<0>();
    }
    __syncthreads();
    const __nv_bfloat16* k_tile = k_stage(stage);
    const __nv_bfloat16* v_tile = v_stage(stage);

    Accumulator p[1][key_tiles];  // [16 queries, 32 keys]
    attention_mma::zero(p);
    attention_mma::multiply_by_rows<1, qk_chunks, key_tiles>(p, q_tile, stride_of(qk_width), 16 * warp, k_tile,
                                                          stride_of(qk_width));
    Accumulator d_p[1][key_tiles];  // d_out V^T [16 queries, 32 keys]
    attention_mma::zero(d_p);
    attention_mma::multiply_by_rows<1, v_chunks, key_tiles>(d_p, d_out_tile, stride_of(v_width), 16 * warp, v_tile,
                                                         stride_of(v_width));
#pragma unroll
    for (int n = 0; n < key_tiles; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int64_t key = first_key + 8 * n + 2 * (lane % 4) + e % 2, query = query_low + 8 * (e / 2);
        float probability_value = probability(p[0][n].value[e], scale_log2, lse_log2[e / 2], key, query, sequence);
        d_p[0][n].value[e] = probability_value * (d_p[0][n].value[e] - output_dot[e / 2]);  // dS
      }
    }
    attention_mma::multiply_accumulators_by_tile<1, kQueryKernelKeys / 16, qk_tiles>(d_q_tiles, d_p, k_tile,
                                                                                  stride_of(qk_width));
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  HeadRows<float> d_q_rows = attention_tiles::head_rows(d_q, batch_index, head, sequence, geometry.heads,
                                                        geometry.qk_dim);
  attention_tiles::store_rows(d_q_rows, first_query + 16 * warp, d_q_tiles[0], geometry.softmax_scale,
                              geometry.softmax_scale);
}

template <typename Kernel>
cudaError_t allow_shared_bytes(Kernel kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

}  // namespace

cudaError_t attention_backward_bf16(float* d_q, float* d_k, float* d_v, const uint16_t* d_out, const uint16_t* q,
                                    const uint16_t* k, const uint16_t* v, const float* lse,
                                    const AttentionGeometry& geometry, cudaStream_t stream) {
  bool wgmma = false;
  cudaError_t wgmma_status = attention_wgmma_applies(geometry, &wgmma);
  if (wgmma_status != cudaSuccess) return wgmma_status;
  if (wgmma) return attention_backward_bf16_wgmma(d_q, d_k, d_v, d_out, q, {k, v}, lse, geometry, stream);
  auto q_bf16 = reinterpret_cast<const __nv_bfloat16*>(q);
  auto k_bf16 = reinterpret_cast<const __nv_bfloat16*>(k);
  auto v_bf16 = reinterpret_cast<const __nv_bfloat16*>(v);
  auto d_out_bf16 = reinterpret_cast<const __nv_bfloat16*>(d_out);
  unsigned int blocks = static_cast<unsigned int>((geometry.sequence + kOwnedRows - 1) / kOwnedRows);
  dim3 grid(blocks, static_cast<unsigned int>(geometry.batch * geometry.heads));
  return attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    auto key_kernel = attention_key_gradients_kernel<qk, vw>;
    auto query_kernel = attention_query_gradients_kernel<qk, vw>;
    constexpr int key_bytes = key_kernel_shared_bytes<qk, vw>(), query_bytes = query_kernel_shared_bytes<qk, vw>();
    cudaError_t status = allow_shared_bytes(key_kernel, key_bytes);
    if (status == cudaSuccess) status = allow_shared_bytes(query_kernel, query_bytes);
    if (status != cudaSuccess) return status;
    key_kernel<<<grid, kWarps * 32, key_bytes, stream>>>(d_k, d_v, d_q, d_out_bf16, q_bf16, k_bf16, v_bf16, lse,
                                                         geometry);
    status = cudaGetLastError();
    if (status != cudaSuccess) return status;
    query_kernel<<<grid, kWarps * 32, query_bytes, stream>>>(d_q, d_out_bf16, q_bf16, k_bf16, v_bf16, lse, geometry);
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
