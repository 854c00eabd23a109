// Causal attention backward on Hopper's warpgroup tensor cores (wgmma), the same two deterministic kernels as the
// mma.sync backward (attention_backward_kernels.cu: no atomics, every gradient row written by one block) with
// operands read straight from shared memory and the probabilities kept in registers:
//   key kernel:   a block owns 128 keys of one (b, h), each of its two warpgroups 64, and walks the 64-query tiles
//                 from the diagonal on: S^T = K Q^T and dP^T = V d_out^T (both operands in shared memory), then
//                 P^T and dS^T = P^T o (dP^T - D) in registers, which are the A operands of d_v += P^T d_out and
//                 d_k += dS^T q (d_out and q MN-major, from the same tiles).
//   query kernel: a block owns 128 queries (64 per warpgroup) and walks the 64-key tiles up to the diagonal:
//                 S = Q K^T, dP = d_out V^T, dS = P o (dP - D) in registers, d_q += dS k (k MN-major). Its
//                 iteration j issues S_j and dP_j and then d_q += dS_{j-1} k_{j-1}, and makes dS_j while that
//                 product runs (FA3's intra-warpgroup pipelining; d_q adds the same products in the same order).
// Both prefetch the tiles they walk with TMA copies that one thread issues (the next tile's copies are in flight
// while the current one is multiplied): the key kernel in two stages, the query kernel in three (it reads tiles j
// and j - 1). D and lse as in the mma.sync kernels: D[i] = dot(d_out[i], out[i]) in d_q's first column,
// written by attention_output_dots; the key kernel runs first and the query kernel reads its rows' D before it
// overwrites them. P and dS are rounded to bf16 for the tensor-core products; everything accumulates in fp32.
// The same kernels write MLA's layout instead (attention_backward_mla_wgmma; D then in rows of its own): the
// epilogues round d_q to bf16 with its rope columns rotated back, and split d_k into bf16 columns beside d_v's and
// fp32 rope columns.
// Compiled for sm_90a only (HAI_WGMMA_AVAILABLE); attention_backward_bf16 runs it where attention_wgmma_applies.

#include <cuda_bf16.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/attention_widths.cuh"
#include "framework/device/cuda/attention_wgmma.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"
#include "framework/device/cuda/wgmma_support.h"

namespace hai::cuda::kernels {
namespace {

using attention_tiles::QueryStatRows;
using attention_tiles::HeadRows;
using attention_wgmma::AccumulatorPlace;
using attention_wgmma::CausalTile;
using attention_wgmma::bf16;
using attention_wgmma::Tile;

constexpr int kThreads = 256;  // two warpgroups
constexpr int kOwnedRows = 2 * attention_wgmma::kWarpgroupRows;  // keys of a key block, queries of a query block
constexpr int kStepRows = attention_wgmma::kStepRows;  // queries per step of the key kernel, keys of the query kernel
constexpr float kLog2E = 1.4426950408889634f;

// What the kernels write and where they read D: attention_backward's fp32 gradients with D in d_q's first column,
// or MLA's layout (mla.d_q not null) with D in rows of its own.
struct BackwardTargets {
  float* d_q;  // [B, S, H, d_qk] fp32, or null
  float* d_k;  // [B, S, H, d_qk] fp32, or null
  float* d_v;  // [B, S, H, d_v] fp32, or null
  MlaGradients mla;
  const float* dots;    // D of row r of [B, S, H] at dots[r * dots_stride]
  int64_t dots_stride;

  __host__ __device__ bool is_mla() const { return mla.d_q != nullptr; }
};

template <typename Element>
__device__ inline HeadRows<Element> output_rows(Element* tensor, const AttentionGeometry& geometry, int dim) {
  return attention_tiles::head_rows(tensor, blockIdx.y / geometry.heads, blockIdx.y % geometry.heads,
                                    geometry.sequence, geometry.heads, dim);
}

// Columns [first, first + count) of `rows`.
template <typename Element>
__device__ inline HeadRows<Element> column_window(const HeadRows<Element>& rows, int first, int count) {
  return {rows.base + first, rows.pitch, count, rows.valid};
}

// The key kernel's gradients of its warpgroup's 64 keys from first_key: d_k (times the softmax scale) and d_v.
template <int qk_width, int v_width>
__device__ inline void store_key_gradients(const BackwardTargets& targets, const AttentionGeometry& geometry,
                                           int64_t first_key, const float (&d_k)[qk_width / 2],
                                           const float (&d_v)[v_width / 2]) {
  const float scale = geometry.softmax_scale;
  if (!targets.is_mla()) {
    attention_wgmma::store_rows<qk_width>(output_rows(targets.d_k, geometry, geometry.qk_dim), first_key, d_k, scale,
                                          scale);
    attention_wgmma::store_rows<v_width>(output_rows(targets.d_v, geometry, geometry.v_dim), first_key, d_v, 1.0f,
                                         1.0f);
    return;
  }
  const int nope = targets.mla.nope_dim;
  const HeadRows<bf16> d_kv = output_rows(reinterpret_cast<bf16*>(targets.mla.d_kv), geometry, nope + geometry.v_dim);
  attention_wgmma::store_rows<qk_width>(column_window(d_kv, 0, nope), first_key, d_k, scale, scale);
  attention_wgmma::store_rows<qk_width>(output_rows(targets.mla.d_k_rope, geometry, geometry.qk_dim - nope),
                                        first_key, d_k, scale, scale, nope);
  attention_wgmma::store_rows<v_width>(column_window(d_kv, nope, geometry.v_dim), first_key, d_v, 1.0f, 1.0f);
}

// The query kernel's d_q (times the softmax scale) of its warpgroup's 64 queries from first_query.
template <int qk_width>
__device__ inline void store_query_gradients(const BackwardTargets& targets, const AttentionGeometry& geometry,
                                             int64_t first_query, const float (&d_q)[qk_width / 2]) {
  const float scale = geometry.softmax_scale;
  if (!targets.is_mla()) {
    attention_wgmma::store_rows<qk_width>(output_rows(targets.d_q, geometry, geometry.qk_dim), first_query, d_q,
                                          scale, scale);
    return;
  }
  const MlaGradients& mla = targets.mla;
  const int64_t batch_index = blockIdx.y / geometry.heads;
  const attention_wgmma::RotatedColumns rope{.positions = mla.positions + batch_index * geometry.sequence,
                                             .cos = mla.cos,
                                             .sin = mla.sin,
                                             .pairs = (geometry.qk_dim - mla.nope_dim) / 2,
                                             .table_positions = mla.table_positions,
                                             .first_column = mla.nope_dim};
  attention_wgmma::store_rotated_rows<qk_width>(output_rows(reinterpret_cast<bf16*>(mla.d_q), geometry,
                                                            geometry.qk_dim),
                                                first_query, d_q, scale, rope);
}

// exp(score * scale - lse) in log2 units.
__device__ inline float probability(float score, float scale_log2, float lse_log2) {
  return exp2f(score * scale_log2 - lse_log2);
}

// Shared memory of the key kernel: K and V of the block's keys, then two stages of the query tiles it walks (q and
// d_out), then per stage the queries' lse (log2 units) and D. TMA copies that one thread issues fill the tiles,
// each stage completing on an mbarrier; the threads copy the statistics.
template <int qk_width, int v_width>
struct KeyKernelLayout {
  using KTile = Tile<kOwnedRows, qk_width>;
  using VTile = Tile<kOwnedRows, v_width>;
  using QTile = Tile<kStepRows, qk_width>;
  using DOutTile = Tile<kStepRows, v_width>;
  static constexpr int kStageBytes = QTile::kBytes + DOutTile::kBytes;
  static constexpr int kTileBytes = KTile::kBytes + VTile::kBytes + 2 * kStageBytes;
  static constexpr int kStatBytes = 2 * 2 * kStepRows * static_cast<int>(sizeof(float));
  static constexpr int kSharedBytes = kTileBytes + kStatBytes + 3 * static_cast<int>(sizeof(uint64_t)) + 1024;

  unsigned char* base;  // 1024-byte aligned
  __device__ unsigned char* k() const { return base; }
  __device__ unsigned char* v() const { return base + KTile::kBytes; }
  __device__ unsigned char* q(int stage) const { return v() + VTile::kBytes + stage * kStageBytes; }
  __device__ unsigned char* d_out(int stage) const { return q(stage) + QTile::kBytes; }
  __device__ float* lse_log2(int stage) const {
    return reinterpret_cast<float*>(base + kTileBytes) + stage * 2 * kStepRows;
  }
  __device__ float* output_dot(int stage) const { return lse_log2(stage) + kStepRows; }
  // The mbarriers on which a stage's copies (and those of K and V) complete.
  __device__ uint64_t* stage_ready(int stage) const {
    return reinterpret_cast<uint64_t*>(base + kTileBytes + kStatBytes) + stage;
  }
  __device__ uint64_t* keys_ready() const { return stage_ready(2); }
};

#if defined(HAI_WGMMA_AVAILABLE)
// One query tile of the key kernel for this warpgroup's 64 keys (from first_key): d_v += P^T d_out,
// d_k += dS^T q. masked: the tile may hold queries before some key or past the sequence end.
template <int qk_width, int v_width>
__device__ inline void key_kernel_step(float (&d_k)[qk_width / 2], float (&d_v)[v_width / 2],
                                       const KeyKernelLayout<qk_width, v_width>& layout, int stage, int warpgroup,
                                       int64_t first_key, int64_t first_query, int64_t sequence, bool masked,
                                       float scale_log2) {
  float scores[32], d_p[32];  // S^T, then P^T; dP^T, then dS^T: [64 keys, 64 queries]
  int key_row0 = attention_wgmma::kWarpgroupRows * warpgroup;
  sm90::warpgroup_fence();
  attention_wgmma::multiply_tiles<qk_width, kOwnedRows, kStepRows, true>(scores, layout.k(), key_row0, layout.q(stage));
  sm90::warpgroup_commit();
  attention_wgmma::multiply_tiles<v_width, kOwnedRows, kStepRows, true>(d_p, layout.v(), key_row0, layout.d_out(stage));
  sm90::warpgroup_commit();

  // P^T while dP^T is in flight.
  sm90::warpgroup_wait<1>();
  attention_wgmma::fence_registers(scores);
  const float* lse_log2 = layout.lse_log2(stage);
  const float* output_dot = layout.output_dot(stage);
  AccumulatorPlace place;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      scores[4 * j + e] = probability(scores[4 * j + e], scale_log2, lse_log2[place.column(j, e)]);
    }
  }
  if (masked) attention_wgmma::mask_uncounted<true>(scores, CausalTile(first_key, first_query, sequence), 0.0f);
  sm90::warpgroup_wait<0>();
  attention_wgmma::fence_registers(d_p);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) d_p[4 * j + e] = scores[4 * j + e] * (d_p[4 * j + e] - output_dot[place.column(j, e)]);
  }
  uint32_t transposed_p[4][4], transposed_d_s[4][4];  // bf16 A fragments, 16 queries each
  attention_wgmma::as_register_a(transposed_p, scores);
  attention_wgmma::as_register_a(transposed_d_s, d_p);

  sm90::warpgroup_fence();
#pragma unroll
  for (int slice = 0; slice < kStepRows / 16; ++slice) {
    attention_wgmma::multiply_register_a<v_width>(d_v, transposed_p[slice],
                                                  attention_wgmma::mn_major<kStepRows>(layout.d_out(stage), slice));
    attention_wgmma::multiply_register_a<qk_width>(d_k, transposed_d_s[slice],
                                                   attention_wgmma::mn_major<kStepRows>(layout.q(stage), slice));
  }
  sm90::warpgroup_commit();
  sm90::warpgroup_wait<0>();
}
#endif

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kThreads, 1)
    attention_key_gradients_wgmma_kernel(BackwardTargets targets, const __grid_constant__ CUtensorMap d_out_map,
                                         const __grid_constant__ CUtensorMap q_map,
                                         const __grid_constant__ attention_wgmma::KeyValueMaps key_value_maps,
                                         const float* lse,
                                         AttentionGeometry geometry) {
#if defined(HAI_WGMMA_AVAILABLE)
  using Layout = KeyKernelLayout<qk_width, v_width>;
  extern __shared__ __align__(16) unsigned char shared[];
  const Layout layout{attention_wgmma::align_1024(shared)};
  const int64_t sequence = geometry.sequence;
  const int batch_index = static_cast<int>(blockIdx.y / geometry.heads);
  const int head = static_cast<int>(blockIdx.y % geometry.heads);
  const QueryStatRows stats =
      attention_tiles::query_stat_rows(targets.dots, targets.dots_stride, lse, geometry, batch_index, head);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int64_t first_key = int64_t{blockIdx.x} * kOwnedRows;
  const int64_t warpgroup_first_key = first_key + attention_wgmma::kWarpgroupRows * warpgroup;
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  const bool issues_copies = threadIdx.x == 0;
  // Called by the issuing thread only.
  auto load_query_tile = [&](int stage, int64_t first_query) {
    uint64_t* ready = layout.stage_ready(stage);
    attention_wgmma::copy_head_row_pair<kStepRows, qk_width, v_width>(layout.q(stage), &q_map, layout.d_out(stage),
                                                                      &d_out_map, head, first_query, batch_index,
                                                                      ready);
  };

  // Prologue: the barriers, then K, V and the first query tile, and the first tile's statistics.
  if (issues_copies) {
    for (int i = 0; i < 3; ++i) sm90::barrier_init(layout.stage_ready(i), 1);
    sm90::fence_barrier_init();
  }
  __syncthreads();
  if (issues_copies) {
    attention_wgmma::copy_key_value_rows<kOwnedRows, qk_width, v_width>(layout.k(), layout.v(), key_value_maps, head,
                                                                        first_key, batch_index, layout.keys_ready());
    load_query_tile(0, first_key);
  }
  if (threadIdx.x < 2 * kStepRows) {
    layout.lse_log2(0)[threadIdx.x] = attention_tiles::query_row_stat<kStepRows>(stats, first_key, sequence);
  }
  __syncthreads();  // the first tile's statistics

  float d_k_values[qk_width / 2], d_v_values[v_width / 2];  // [64 keys, qk_width], [64 keys, v_width]
  attention_wgmma::zero(d_k_values);
  attention_wgmma::zero(d_v_values);
  sm90::barrier_wait(layout.keys_ready(), 0);
  int stage = 0;
  uint32_t parity = 0;  // of the stage's current use: uses alternate between the two stages
  for (int64_t first_query = first_key; first_query < sequence; first_query += kStepRows) {
    const int64_t next_query = first_query + kStepRows;
    const bool has_next = next_query < sequence;
    const float next_stat = has_next ? attention_tiles::query_row_stat<kStepRows>(stats, next_query, sequence) : 0.0f;
    sm90::barrier_wait(layout.stage_ready(stage), parity);
    // NOTE: the previous iteration's closing barrier saw both warpgroups done with the other stage.
    if (issues_copies && has_next) load_query_tile(stage ^ 1, next_query);
    // A warpgroup whose keys all come after the tile's queries has nothing to add.
    if (first_query + kStepRows > warpgroup_first_key && warpgroup_first_key < sequence) {
      const bool masked = first_query < warpgroup_first_key + attention_wgmma::kWarpgroupRows ||
                          first_query + kStepRows > sequence;
      key_kernel_step(d_k_values, d_v_values, layout, stage, warpgroup, warpgroup_first_key, first_query, sequence,
                      masked, scale_log2);
    }
    if (has_next && threadIdx.x < 2 * kStepRows) layout.lse_log2(stage ^ 1)[threadIdx.x] = next_stat;
    // NOTE: one barrier an iteration, at its end: both warpgroups are done with this stage (which the next
    // iteration refills) and the next stage's statistics are written. (A barrier at the start instead made ptxas
    // serialise the products, C7520, and spill.)
    __syncthreads();
    parity ^= stage;  // the next use of stage 0 is the next phase of its barrier
    stage ^= 1;
  }
  attention_wgmma::fence_registers(d_k_values);
  attention_wgmma::fence_registers(d_v_values);
  store_key_gradients<qk_width, v_width>(targets, geometry, warpgroup_first_key, d_k_values, d_v_values);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (wgmma_applies)
#endif
}

// Shared memory of the query kernel: Q and d_out of the block's queries, then a ring of three stages of the key
// tiles it walks (k and v): iteration j reads tiles j and j - 1 while tile j + 1 fills. TMA copies that one
// thread issues fill them, each stage completing on an mbarrier.
template <int qk_width, int v_width>
struct QueryKernelLayout {
  using QTile = Tile<kOwnedRows, qk_width>;
  using DOutTile = Tile<kOwnedRows, v_width>;
  using KTile = Tile<kStepRows, qk_width>;
  using VTile = Tile<kStepRows, v_width>;
  static constexpr int kStages = 3;
  static constexpr int kStageBytes = KTile::kBytes + VTile::kBytes;
  static constexpr int kTileBytes = QTile::kBytes + DOutTile::kBytes + kStages * kStageBytes;
  static constexpr int kSharedBytes = kTileBytes + (kStages + 1) * static_cast<int>(sizeof(uint64_t)) + 1024;

  unsigned char* base;  // 1024-byte aligned
  __device__ unsigned char* q() const { return base; }
  __device__ unsigned char* d_out() const { return base + QTile::kBytes; }
  __device__ unsigned char* k(int tile) const { return d_out() + DOutTile::kBytes + tile % kStages * kStageBytes; }
  __device__ unsigned char* v(int tile) const { return k(tile) + KTile::kBytes; }
  // The mbarriers on which a stage's copies (and those of Q and d_out) complete.
  __device__ uint64_t* stage_ready(int tile) const {
    return reinterpret_cast<uint64_t*>(base + kTileBytes) + tile % kStages;
  }
  __device__ uint64_t* rows_ready() const { return reinterpret_cast<uint64_t*>(base + kTileBytes) + kStages; }
};

#if defined(HAI_WGMMA_AVAILABLE)
// The lse (log2 units) and D of this thread's two query rows (rows e = 0 and e = 2 of AccumulatorPlace).
struct QueryRowStats {
  float lse_log2[2], output_dot[2];
};

// One iteration of a warpgroup's pipeline over the key tiles, for its 64 queries from first_query: issues S_j = Q
// K_j^T and dP_j = d_out V_j^T (kScores: the warpgroup has tile j) and d_q += dS_{j-1} k_{j-1} (kGradient: it had
// tile j - 1), and makes dS_j while the last product runs. d_s holds dS_{j-1} on entry, dS_j on return.
// NOTE: each combination is one straight run from the first product to the last wait: ptxas serialises products
// whose issue and wait lie on different sides of a branch.
template <bool kScores, bool kGradient, int qk_width, int v_width>
__device__ inline void query_kernel_iteration(float (&d_q)[qk_width / 2], uint32_t (&d_s)[4][4],
                                              const QueryKernelLayout<qk_width, v_width>& layout, int tile,
                                              int warpgroup, const QueryRowStats& stats, int64_t first_query,
                                              int64_t sequence, float scale_log2) {
  float scores[32], d_p[32];  // S, then P; dP, then dS: [64 queries, 64 keys]
  int query_row0 = attention_wgmma::kWarpgroupRows * warpgroup;
  sm90::warpgroup_fence();
  if constexpr (kScores) {
    attention_wgmma::multiply_tiles<qk_width, kOwnedRows, kStepRows, true>(scores, layout.q(), query_row0,
                                                                           layout.k(tile));
    sm90::warpgroup_commit();
    attention_wgmma::multiply_tiles<v_width, kOwnedRows, kStepRows, true>(d_p, layout.d_out(), query_row0,
                                                                          layout.v(tile));
    sm90::warpgroup_commit();
  }
  if constexpr (kGradient) {
    attention_wgmma::multiply_register_a_by_tile<qk_width, kStepRows>(d_q, d_s, layout.k(tile - 1));
    sm90::warpgroup_commit();
  }
  if constexpr (kScores) {
    // P while dP (and d_q's product) are in flight.
    sm90::warpgroup_wait<kGradient ? 2 : 1>();
    attention_wgmma::fence_registers(scores);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) scores[4 * j + e] = probability(scores[4 * j + e], scale_log2, stats.lse_log2[e / 2]);
    }
    // Only the diagonal tile holds keys after some query (and only a warpgroup at the sequence end has rows past it).
    const int64_t first_key = int64_t{tile} * kStepRows;
    if (first_key + kStepRows > first_query || first_query + attention_wgmma::kWarpgroupRows > sequence) {
      attention_wgmma::mask_uncounted<false>(scores, CausalTile(first_key, first_query, sequence), 0.0f);
    }
    sm90::warpgroup_wait<kGradient ? 1 : 0>();
    attention_wgmma::fence_registers(d_p);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) d_p[4 * j + e] = scores[4 * j + e] * (d_p[4 * j + e] - stats.output_dot[e / 2]);
    }
  }
  sm90::warpgroup_wait<0>();
  attention_wgmma::fence_registers(d_q);
  if constexpr (kScores) {
    attention_wgmma::fence_registers(d_s);  // dS_{j-1} was read by the tensor cores until the wait
    attention_wgmma::as_register_a(d_s, d_p);
  }
}
#endif

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kThreads, 1)
    attention_query_gradients_wgmma_kernel(BackwardTargets targets, const __grid_constant__ CUtensorMap d_out_map,
                                           const __grid_constant__ CUtensorMap q_map,
                                           const __grid_constant__ attention_wgmma::KeyValueMaps key_value_maps,
                                           const float* lse,
                                           AttentionGeometry geometry) {
#if defined(HAI_WGMMA_AVAILABLE)
  using Layout = QueryKernelLayout<qk_width, v_width>;
  extern __shared__ __align__(16) unsigned char shared[];
  const Layout layout{attention_wgmma::align_1024(shared)};
  const int64_t sequence = geometry.sequence;
  const int batch_index = static_cast<int>(blockIdx.y / geometry.heads);
  const int head = static_cast<int>(blockIdx.y % geometry.heads);
  const float* head_lse = lse + blockIdx.y * sequence;
  const QueryStatRows row_stats =
      attention_tiles::query_stat_rows(targets.dots, targets.dots_stride, lse, geometry, batch_index, head);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int64_t first_query = int64_t{gridDim.x - 1 - blockIdx.x} * kOwnedRows;  // diagonal-heavy blocks first
  const int64_t warpgroup_first_query = first_query + attention_wgmma::kWarpgroupRows * warpgroup;
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  const bool issues_copies = threadIdx.x == 0;
  // Called by the issuing thread only.
  auto load_key_tile = [&](int tile) {
    uint64_t* ready = layout.stage_ready(tile);
    attention_wgmma::copy_key_value_rows<kStepRows, qk_width, v_width>(layout.k(tile), layout.v(tile), key_value_maps,
                                                                       head, int64_t{tile} * kStepRows, batch_index,
                                                                       ready);
  };

  QueryRowStats stats;
  AccumulatorPlace place;
  for (int half = 0; half < 2; ++half) {
    int64_t query = warpgroup_first_query + place.row(2 * half);
    bool valid = query < sequence;
    stats.lse_log2[half] = valid ? head_lse[query] * kLog2E : 0.0f;
    stats.output_dot[half] = valid ? row_stats.dot(query) : 0.0f;
  }
  // Prologue: the barriers, then Q, d_out and the first key tile.
  if (issues_copies) {
    for (int i = 0; i <= Layout::kStages; ++i) sm90::barrier_init(layout.stage_ready(0) + i, 1);
    sm90::fence_barrier_init();
  }
  __syncthreads();
  if (issues_copies) {
    attention_wgmma::copy_head_row_pair<kOwnedRows, qk_width, v_width>(layout.q(), &q_map, layout.d_out(), &d_out_map,
                                                                       head, first_query, batch_index,
                                                                       layout.rows_ready());
    load_key_tile(0);
  }

  float d_q_values[qk_width / 2];  // [64 queries, qk_width]
  attention_wgmma::zero(d_q_values);
  uint32_t d_s[4][4];  // dS of the last tile as bf16 A fragments, 16 keys each
  const int64_t end_key = first_query + kOwnedRows < sequence ? first_query + kOwnedRows : sequence;
  const int tiles = static_cast<int>((end_key + kStepRows - 1) / kStepRows);
  // A warpgroup whose queries all come before a tile's keys has nothing to add: it has the tiles up to its own
  // diagonal one (none when its queries are past the sequence end).
  const int64_t warpgroup_diagonal = warpgroup_first_query < sequence ? warpgroup_first_query / kStepRows + 1 : 0;
  const int warpgroup_tiles = static_cast<int>(warpgroup_diagonal < tiles ? warpgroup_diagonal : tiles);
  // Iteration j makes dS_j and adds dS_{j-1} k_{j-1}; the one after the last tile adds the last product.
  for (int tile = 0; tile <= tiles; ++tile) {
    if (tile == 0) sm90::barrier_wait(layout.rows_ready(), 0);
    if (tile < tiles) sm90::barrier_wait(layout.stage_ready(tile), (tile / Layout::kStages) & 1);
    // NOTE: past this barrier both warpgroups are done with iteration tile - 1, so the stage of tile + 1 (last read
    // by tile - 2's product) may be refilled.
    __syncthreads();
    if (issues_copies && tile + 1 < tiles) load_key_tile(tile + 1);
    const bool has_scores = tile < warpgroup_tiles, has_gradient = tile >= 1 && tile <= warpgroup_tiles;
    if (has_scores && has_gradient) {
      query_kernel_iteration<true, true>(d_q_values, d_s, layout, tile, warpgroup, stats, warpgroup_first_query,
                                         sequence, scale_log2);
    } else if (has_scores) {
      query_kernel_iteration<true, false>(d_q_values, d_s, layout, tile, warpgroup, stats, warpgroup_first_query,
                                          sequence, scale_log2);
    } else if (has_gradient) {
      query_kernel_iteration<false, true>(d_q_values, d_s, layout, tile, warpgroup, stats, warpgroup_first_query,
                                          sequence, scale_log2);
    }
  }
  store_query_gradients<qk_width>(targets, geometry, warpgroup_first_query, d_q_values);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (wgmma_applies)
#endif
}

// HAI_ATTENTION_WGMMA=0 in the environment (read once) runs the mma.sync kernels where these would run: for A/B
// timings on a GPU.
bool wgmma_kernels_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("HAI_ATTENTION_WGMMA");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

template <typename Kernel, typename... Arguments>
cudaError_t launch(Kernel kernel, dim3 grid, int shared_bytes, cudaStream_t stream, Arguments... arguments) {
  cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (status != cudaSuccess) return status;
  kernel<<<grid, kThreads, shared_bytes, stream>>>(arguments...);
  return cudaGetLastError();
}

// The tensor maps of a backward kernel that copies `query_rows` rows of q and d_out and `key_rows` rows of k and v at
// a time.
struct BackwardMaps {
  CUtensorMap d_out, q;
  attention_wgmma::KeyValueMaps key_values;
};

cudaError_t encode_backward_maps(BackwardMaps* maps, const uint16_t* d_out, const uint16_t* q,
                                 const KeyValueSource& key_values, const AttentionGeometry& geometry, int query_rows,
                                 int key_rows) {
  cudaError_t status =
      encode_tensor_maps({attention_wgmma::head_rows_map(&maps->d_out, d_out, geometry, geometry.v_dim, query_rows),
                          attention_wgmma::head_rows_map(&maps->q, q, geometry, geometry.qk_dim, query_rows)});
  if (status != cudaSuccess) return status;
  return attention_wgmma::encode_key_value_maps(&maps->key_values, key_values, geometry, key_rows);
}

}  // namespace

cudaError_t attention_wgmma_applies(const AttentionGeometry& geometry, bool* applies) {
  *applies = false;
  bool widths_fit =
      attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [](auto qk_width, auto v_width) {
        return attention_wgmma::built_for(decltype(qk_width)::value, decltype(v_width)::value);
      });
  if (!widths_fit || !wgmma_kernels_enabled()) return cudaSuccess;
  return wgmma_applies(applies);
}

namespace {

cudaError_t launch_backward(const BackwardTargets& targets, const uint16_t* d_out, const uint16_t* q,
                            const KeyValueSource& key_values, const float* lse, const AttentionGeometry& geometry,
                            cudaStream_t stream) {
  unsigned int blocks = static_cast<unsigned int>((geometry.sequence + kOwnedRows - 1) / kOwnedRows);
  dim3 grid(blocks, static_cast<unsigned int>(geometry.batch * geometry.heads));
  auto launch_widths = [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    // The key kernel copies 64-query tiles and its 128 keys, the query kernel 64-key tiles and its 128 queries.
    BackwardMaps key_kernel_maps, query_kernel_maps;
    cudaError_t status =
        encode_backward_maps(&key_kernel_maps, d_out, q, key_values, geometry, kStepRows, kOwnedRows);
    if (status != cudaSuccess) return status;
    status = encode_backward_maps(&query_kernel_maps, d_out, q, key_values, geometry, kOwnedRows, kStepRows);
    if (status != cudaSuccess) return status;
    status = launch(attention_key_gradients_wgmma_kernel<qk, vw>, grid, KeyKernelLayout<qk, vw>::kSharedBytes, stream,
                    targets, key_kernel_maps.d_out, key_kernel_maps.q, key_kernel_maps.key_values, lse, geometry);
    if (status != cudaSuccess) return status;
    return launch(attention_query_gradients_wgmma_kernel<qk, vw>, grid, QueryKernelLayout<qk, vw>::kSharedBytes,
                  stream, targets, query_kernel_maps.d_out, query_kernel_maps.q, query_kernel_maps.key_values, lse,
                  geometry);
  };
  return attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    if constexpr (attention_wgmma::built_for(qk, vw)) {
      return launch_widths(qk_width, v_width);
    } else {
      return cudaErrorNotSupported;
    }
  });
}

}  // namespace

cudaError_t attention_backward_bf16_wgmma(float* d_q, float* d_k, float* d_v, const uint16_t* d_out,
                                          const uint16_t* q, const KeyValueSource& key_values, const float* lse,
                                          const AttentionGeometry& geometry, cudaStream_t stream) {
  BackwardTargets targets{.d_q = d_q, .d_k = d_k, .d_v = d_v, .mla = {}, .dots = d_q, .dots_stride = geometry.qk_dim};
  return launch_backward(targets, d_out, q, key_values, lse, geometry, stream);
}

cudaError_t attention_backward_mla_wgmma(const MlaGradients& gradients, const float* dots, const uint16_t* d_out,
                                         const uint16_t* q, const KeyValueSource& key_values, const float* lse,
                                         const AttentionGeometry& geometry, cudaStream_t stream) {
  if (gradients.d_q == nullptr || gradients.nope_dim % 2 != 0) return cudaErrorInvalidValue;
  BackwardTargets targets{
      .d_q = nullptr, .d_k = nullptr, .d_v = nullptr, .mla = gradients, .dots = dots, .dots_stride = 1};
  return launch_backward(targets, d_out, q, key_values, lse, geometry, stream);
}

}  // namespace hai::cuda::kernels
