// Causal attention forward on Hopper's warpgroup tensor cores (wgmma), flash-attention style as the mma.sync
// forward (attention_forward_kernels.cu): a block owns 128 query rows of one (b, h), each of its two warpgroups 64,
// and walks the 128-key tiles up to the diagonal: S = Q K^T with both operands in shared memory, the online softmax
// in fp32 registers, P rounded to bf16 as the register A operand of out += P V (v MN-major). Writes out (fp32, or
// bf16 rounded once) and the log-sum-exp once. A third warpgroup loads (one thread): k and v in two rings of two
// stages, filled by TMA copies, each stage completing on a "ready" mbarrier and given back on an "empty" one when
// both warpgroups' products have read it. (128-key tiles: the score products are m64n128, an iteration's fixed
// costs come half as often.)
//
// The warpgroups take turns to issue their products (FA3's ping-pong, two named barriers): while one turns its
// scores into probabilities (exp2 and the row bookkeeping, which leave the tensor cores idle), the other's products
// run.
//
// The products overlap the softmax (FA3's intra-warpgroup pipelining): iteration j issues S_j = Q K_j^T and then
// out += P_{j-1} V_{j-1}, turns S_j into P_j while the second product runs, and rescales out by the new maxima once
// it is done. out sees the same operations in the same order as a step-by-step loop (rescale by step j's factor,
// then add P_j V_j), so the results are the same bits.

#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/attention_widths.cuh"
#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/attention_wgmma.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels {
namespace {

using attention_tiles::HeadRows;
using attention_wgmma::AccumulatorPlace;
using attention_wgmma::bf16;
using attention_wgmma::CausalTile;
using attention_wgmma::Tile;

constexpr int kConsumerThreads = 256;                  // two warpgroups
constexpr int kBlockThreads = kConsumerThreads + 128;  // and the loading one
// setmaxnreg's split of the register file: the loading warpgroup gives its registers to the other two.
constexpr int kLoaderRegisters = 40, kConsumerRegisters = 232;
static_assert(2 * 128 * kConsumerRegisters + 128 * kLoaderRegisters <= 65536);
// Named barriers (0 is __syncthreads'): warpgroup g issues its products once barrier kTurnBarrier + g completes.
constexpr int kTurnBarrier = 1;
constexpr int kQueries = 2 * attention_wgmma::kWarpgroupRows;  // per block
constexpr int kKeys = 128;                                      // per step
constexpr float kLog2E = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Shared memory: Q of the block's queries, then k and v of the key tiles in two rings of two stages each.
// Iteration j reads k of tile j and v of tile j - 1; it loads k of tile j + 1 (into the stage of tile j - 1's k,
// read by iteration j - 1) and v of tile j (into the stage of tile j - 2's v), so each copy has an iteration to land.
template <int qk_width, int v_width>
struct ForwardLayout {
  using QTile = Tile<kQueries, qk_width>;
  using KTile = Tile<kKeys, qk_width>;
  using VTile = Tile<kKeys, v_width>;
  static constexpr int kTileBytes = QTile::kBytes + 2 * KTile::kBytes + 2 * VTile::kBytes;
  static constexpr int kBarriers = 9;
  static constexpr int kSharedBytes = kTileBytes + kBarriers * static_cast<int>(sizeof(uint64_t)) + 1024;

  unsigned char* base;  // 1024-byte aligned
  __device__ unsigned char* q() const { return base; }
  __device__ unsigned char* k(int tile) const { return base + QTile::kBytes + tile % 2 * KTile::kBytes; }
  __device__ unsigned char* v(int tile) const {
    return base + QTile::kBytes + 2 * KTile::kBytes + tile % 2 * VTile::kBytes;
  }
  // The mbarriers on which the copies of a tile's k, a tile's v and Q complete, and on which both warpgroups give a
  // tile's k and v back.
  __device__ uint64_t* barriers() const { return reinterpret_cast<uint64_t*>(base + kTileBytes); }
  __device__ uint64_t* k_ready(int tile) const { return barriers() + tile % 2; }
  __device__ uint64_t* v_ready(int tile) const { return barriers() + 2 + tile % 2; }
  __device__ uint64_t* k_empty(int tile) const { return barriers() + 4 + tile % 2; }
  __device__ uint64_t* v_empty(int tile) const { return barriers() + 6 + tile % 2; }
  __device__ uint64_t* q_ready() const { return barriers() + 8; }
};

// The running softmax of this thread's two rows (AccumulatorPlace rows e = 0 and e = 2).
struct RowSoftmax {
  float max[2] = {-INFINITY, -INFINITY};  // in log2 units (scores times softmax_scale * log2 e)
  float sum[2] = {0.0f, 0.0f};            // this thread's part of the row sums
};

// Turns one key tile's scores (-inf where masked) into probabilities relative to the updated running maxima,
// updates the row sums and returns in `rescale` the factors exp2(old max - new max) of the output rows.
__device__ inline void online_softmax_step(float (&scores)[kKeys / 2], float (&rescale)[2], RowSoftmax& softmax,
                                           float scale_log2) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float& score = scores[4 * j + 2 * half + i];
        score *= scale_log2;
        tile_max = fmaxf(tile_max, score);
      }
    }
    // NOTE: key tile 0 comes first and key 0 <= every query, so the running max is finite from then on (a later
    // tile entirely after a row's query leaves it unchanged and adds exp2(-inf) = 0).
    float new_max = fmaxf(softmax.max[half], quad_max(tile_max));
    rescale[half] = exp2f(softmax.max[half] - new_max);
    softmax.max[half] = new_max;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float& score = scores[4 * j + 2 * half + i];
        score = exp2f(score - new_max);
        sum += score;
      }
    }
    softmax.sum[half] = softmax.sum[half] * rescale[half] + sum;
  }
}

template <int v_width>
__device__ inline void rescale_rows(float (&out)[v_width / 2], const float (&rescale)[2]) {
#pragma unroll
  for (int j = 0; j < v_width / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) out[4 * j + e] *= rescale[e / 2];
  }
}

#if defined(HAI_WGMMA_AVAILABLE)
// One iteration of a warpgroup's pipeline over the key tiles, for its 64 queries from first_query: issues
// S_j = Q K_j^T (kScores: the warpgroup has tile j) and out += P_{j-1} V_{j-1} (kValues: it had tile j - 1), then
// makes P_j of S_j while the second product runs and rescales out when it is done. p holds P_{j-1} on entry, P_j
// on return. masked: tile j may hold keys after some query. The products are issued in the warpgroup's turn, and
// each warp gives k of tile j and v of tile j - 1 back once it has waited for the products that read them.
// NOTE: each combination is one straight run from the first product to the last wait: ptxas serialises products
// whose issue and wait lie on different sides of a branch.
template <bool kScores, bool kValues, int qk_width, int v_width>
__device__ inline void forward_iteration(float (&out)[v_width / 2], uint32_t (&p)[kKeys / 16][4], RowSoftmax& softmax,
                                         const ForwardLayout<qk_width, v_width>& layout, int tile, bool masked,
                                         int warpgroup, int64_t first_query, float scale_log2) {
  float scores[kKeys / 2];  // [64 queries, 128 keys]
  attention_wgmma::zero(scores);
  const bool warp_leader = threadIdx.x % 32 == 0;
  sm90::sync_named(kTurnBarrier + warpgroup, kConsumerThreads);
  sm90::warpgroup_fence();
  if constexpr (kScores) {
    attention_wgmma::multiply_tiles<qk_width, kQueries, kKeys>(scores, layout.q(),
                                                               attention_wgmma::kWarpgroupRows * warpgroup,
                                                               layout.k(tile));
    sm90::warpgroup_commit();
  }
  if constexpr (kValues) {
    attention_wgmma::multiply_register_a_by_tile<v_width, kKeys>(out, p, layout.v(tile - 1));
    sm90::warpgroup_commit();
  }
  sm90::arrive_named(kTurnBarrier + 1 - warpgroup, kConsumerThreads);  // the other warpgroup's turn
  if constexpr (kScores) {
    sm90::warpgroup_wait<kValues ? 1 : 0>();
    attention_wgmma::fence_registers(scores);
    if (warp_leader) sm90::barrier_arrive(layout.k_empty(tile));
    // NOTE: rows past the sequence end (zero q) count like the others, so that their softmax stays finite; they
    // are never stored.
    if (masked) {
      attention_wgmma::mask_uncounted<false>(scores, CausalTile(int64_t{tile} * kKeys, first_query), -INFINITY);
    }
    float rescale[2];
    online_softmax_step(scores, rescale, softmax, scale_log2);
    sm90::warpgroup_wait<0>();
    attention_wgmma::fence_registers(out);
    attention_wgmma::fence_registers(p);  // P_{j-1} was read by the tensor cores until the wait
    if (kValues && warp_leader) sm90::barrier_arrive(layout.v_empty(tile - 1));
    rescale_rows<v_width>(out, rescale);
    attention_wgmma::as_register_a(p, scores);
  } else {
    sm90::warpgroup_wait<0>();
    attention_wgmma::fence_registers(out);
    if (warp_leader) sm90::barrier_arrive(layout.v_empty(tile - 1));
  }
}
#endif

template <int qk_width, int v_width>
__global__ void __launch_bounds__(kBlockThreads, 1)
    attention_forward_wgmma_kernel(void* out, bool bf16_out, float* lse, const __grid_constant__ CUtensorMap q_map,
                                   const __grid_constant__ attention_wgmma::KeyValueMaps key_value_maps,
                                   AttentionGeometry geometry) {
#if defined(HAI_WGMMA_AVAILABLE)
  using Layout = ForwardLayout<qk_width, v_width>;
  extern __shared__ __align__(16) unsigned char shared[];
  const Layout layout{attention_wgmma::align_1024(shared)};
  const int64_t batch_index = blockIdx.y / geometry.heads, head = blockIdx.y % geometry.heads;
  const int64_t sequence = geometry.sequence, heads = geometry.heads;
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int64_t first_query = int64_t{gridDim.x - 1 - blockIdx.x} * kQueries;  // diagonal-heavy blocks first
  const int64_t warpgroup_first_query = first_query + attention_wgmma::kWarpgroupRows * warpgroup;
  const float scale_log2 = geometry.softmax_scale * kLog2E;
  const int64_t end_key = first_query + kQueries < sequence ? first_query + kQueries : sequence;
  // NOTE: both warpgroups walk all the tiles up to the block's diagonal one (the only one with keys after some of
  // their queries, or past the sequence end): the turns need the same iterations on both sides.
  const int tiles = static_cast<int>((end_key + kKeys - 1) / kKeys);

  // The barriers: one arrival completes a ready barrier (with its copies' bytes); each of the 8 consumer warps gives
  // a stage back.
  if (threadIdx.x == 0) {
    for (int i = 0; i < 4; ++i) sm90::barrier_init(layout.barriers() + i, 1);
    for (int i = 4; i < 8; ++i) sm90::barrier_init(layout.barriers() + i, kConsumerThreads / 32);
    sm90::barrier_init(layout.q_ready(), 1);
    sm90::fence_barrier_init();
  }
  __syncthreads();

  if (threadIdx.x >= kConsumerThreads) {
    // The loading warpgroup: Q, then k of tile j + 1 and v of tile j once the stages they take are given back.
    sm90::lower_registers<kLoaderRegisters>();
    if (threadIdx.x == kConsumerThreads) {
      const int head_index = static_cast<int>(head), batch = static_cast<int>(batch_index);
      sm90::barrier_arrive_expect_bytes(layout.q_ready(), Tile<kQueries, qk_width>::kBytes);
      attention_wgmma::copy_head_rows<kQueries, qk_width>(layout.q(), &q_map, head_index, first_query, batch,
                                                          layout.q_ready());
      auto load_keys = [&](int tile) {
        sm90::barrier_arrive_expect_bytes(layout.k_ready(tile), Tile<kKeys, qk_width>::kBytes);
        attention_wgmma::copy_key_rows<kKeys, qk_width>(layout.k(tile), key_value_maps, head_index,
                                                        int64_t{tile} * kKeys, batch, layout.k_ready(tile));
      };
      load_keys(0);
      for (int tile = 0; tile < tiles; ++tile) {
        if (tile + 1 < tiles) {
          if (tile >= 1) sm90::barrier_wait(layout.k_empty(tile - 1), ((tile - 1) / 2) & 1);
          load_keys(tile + 1);
        }
        if (tile >= 2) sm90::barrier_wait(layout.v_empty(tile - 2), ((tile - 2) / 2) & 1);
        sm90::barrier_arrive_expect_bytes(layout.v_ready(tile), Tile<kKeys, v_width>::kBytes);
        attention_wgmma::copy_value_rows<kKeys, v_width>(layout.v(tile), key_value_maps, head_index,
                                                         int64_t{tile} * kKeys, batch, layout.v_ready(tile));
      }
    }
    return;
  }
  sm90::raise_registers<kConsumerRegisters>();

  float out_values[v_width / 2];  // [64 queries, v_width]
  attention_wgmma::zero(out_values);
  uint32_t p[kKeys / 16][4];  // P of the last tile as bf16 A fragments, 16 keys each
  RowSoftmax softmax;
  // Warpgroup 0 takes the first turn.
  if (warpgroup == 1) sm90::arrive_named(kTurnBarrier, kConsumerThreads);
  // Iteration j multiplies S_j and P_{j-1} V_{j-1}; the one after the last tile finishes P V.
  for (int tile = 0; tile <= tiles; ++tile) {
    if (tile == 0) sm90::barrier_wait(layout.q_ready(), 0);
    if (tile < tiles) sm90::barrier_wait(layout.k_ready(tile), (tile / 2) & 1);
    if (tile >= 1) sm90::barrier_wait(layout.v_ready(tile - 1), ((tile - 1) / 2) & 1);
    const bool masked = tile + 1 == tiles;
    if (tile >= 1 && tile < tiles) {
      forward_iteration<true, true>(out_values, p, softmax, layout, tile, masked, warpgroup, warpgroup_first_query,
                                    scale_log2);
    } else if (tile < tiles) {
      forward_iteration<true, false>(out_values, p, softmax, layout, tile, masked, warpgroup, warpgroup_first_query,
                                     scale_log2);
    } else {
      forward_iteration<false, true>(out_values, p, softmax, layout, tile, masked, warpgroup, warpgroup_first_query,
                                     scale_log2);
    }
  }
  if (warpgroup == 0) sm90::sync_named(kTurnBarrier, kConsumerThreads);  // warpgroup 1's last hand-over

  attention_wgmma::fence_registers(out_values);
  float row_sum[2] = {quad_sum(softmax.sum[0]), quad_sum(softmax.sum[1])};
  if (bf16_out) {
    HeadRows<bf16> rows = attention_tiles::head_rows(static_cast<bf16*>(out), batch_index, head, sequence, heads,
                                                     geometry.v_dim);
    attention_wgmma::store_rows<v_width>(rows, warpgroup_first_query, out_values, 1.0f / row_sum[0],
                                         1.0f / row_sum[1]);
  } else {
    HeadRows<float> rows = attention_tiles::head_rows(static_cast<float*>(out), batch_index, head, sequence, heads,
                                                      geometry.v_dim);
    attention_wgmma::store_rows<v_width>(rows, warpgroup_first_query, out_values, 1.0f / row_sum[0],
                                         1.0f / row_sum[1]);
  }
  AccumulatorPlace place;
  float* head_lse = lse + (batch_index * heads + head) * sequence;
  for (int half = 0; half < 2 && threadIdx.x % 4 == 0; ++half) {
    int64_t query = warpgroup_first_query + place.row(2 * half);
    if (query < sequence) head_lse[query] = (softmax.max[half] + log2f(row_sum[half])) * kLn2;
  }
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (attention_wgmma_applies)
#endif
}

}  // namespace

cudaError_t attention_forward_bf16_wgmma(void* out, bool bf16_out, float* lse, const uint16_t* q,
                                         const KeyValueSource& key_values, const AttentionGeometry& geometry,
                                         cudaStream_t stream) {
  return attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    if constexpr (attention_wgmma::built_for(qk, vw)) {
      CUtensorMap q_map;
      attention_wgmma::KeyValueMaps key_value_maps;
      cudaError_t status =
          encode_tensor_maps({attention_wgmma::head_rows_map(&q_map, q, geometry, geometry.qk_dim, kQueries)});
      if (status != cudaSuccess) return status;
      status = attention_wgmma::encode_key_value_maps(&key_value_maps, key_values, geometry, kKeys);
      if (status != cudaSuccess) return status;
      auto kernel = attention_forward_wgmma_kernel<qk, vw>;
      constexpr int shared_bytes = ForwardLayout<qk, vw>::kSharedBytes;
      status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
      if (status != cudaSuccess) return status;
      dim3 grid(static_cast<unsigned int>((geometry.sequence + kQueries - 1) / kQueries),
                static_cast<unsigned int>(geometry.batch * geometry.heads));
      kernel<<<grid, kBlockThreads, shared_bytes, stream>>>(out, bf16_out, lse, q_map, key_value_maps, geometry);
      return cudaGetLastError();
    } else {
      return cudaErrorNotSupported;
    }
  });
}

}  // namespace hai::cuda::kernels
