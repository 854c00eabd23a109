// Causal attention forward on tensor cores (flash-attention 2 style): a block of 4 warps owns 64 query rows of one
// (b, h), each warp 16 of them; it walks the 64-key tiles up to the diagonal, keeping an online softmax in fp32
// registers, and writes out and the log-sum-exp once. bf16 q, k, v; P is rounded to bf16 for the P V product.

#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/attention_kernels.h"
#include "framework/device/cuda/attention_mma.cuh"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/attention_widths.cuh"

namespace hai::cuda::kernels {
namespace {

using attention_mma::Accumulator;
using attention_tiles::HeadRows;
using attention_tiles::stride_of;

constexpr int kWarps = 4;
constexpr int kTile = 64;  // query rows per block and keys per step
constexpr int kKeyTiles = kTile / 8;
constexpr float kLog2E = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int qk_width, int v_width>
constexpr int forward_shared_bytes() {
  return (2 * kTile * stride_of(qk_width) + kTile * stride_of(v_width)) * static_cast<int>(sizeof(__nv_bfloat16));
}

// The running softmax of the two rows (group and group + 8 of the warp's 16) that this thread holds a part of.
struct RowSoftmax {
  float max[2] = {-INFINITY, -INFINITY};  // in log2 units (scores times softmax_scale * log2 e)
  float sum[2] = {0.0f, 0.0f};            // this thread's part of the row sums
};

__device__ inline float quad_max(float value) {
  value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 1));
  return fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 2));
}
__device__ inline float quad_sum(float value) {
  value += __shfl_xor_sync(0xffffffffu, value, 1);
  return value + __shfl_xor_sync(0xffffffffu, value, 2);
}

// Turns the scores of one key tile into probabilities relative to the updated running maximum, masks keys after the
// query (on the diagonal tile), and rescales the output accumulators by exp2(old max - new max).
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
    // NOTE: key first_key <= query on every tile up to the diagonal, so new_max is finite.
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
    attention_forward_kernel(float* out, float* lse, const __nv_bfloat16* q, const __nv_bfloat16* k,
                             const __nv_bfloat16* v, AttentionGeometry geometry) {
  constexpr int qk_chunks = qk_width / 16, v_tiles = v_width / 8;
  extern __shared__ __align__(16) unsigned char shared[];
  __nv_bfloat16* q_tile = reinterpret_cast<__nv_bfloat16*>(shared);  // [64, qk_width]
  __nv_bfloat16* k_tile = q_tile + kTile * stride_of(qk_width);        // [64, qk_width]
  __nv_bfloat16* v_tile = k_tile + kTile * stride_of(qk_width);        // [64, v_width]

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
  const int64_t first_query = static_cast<int64_t>(query_tile) * kTile;
  const int64_t query_low = first_query + 16 * warp + lane / 4;
  const float scale_log2 = geometry.softmax_scale * kLog2E;

  attention_tiles::load_tile_async<kTile, qk_width>(q_tile, q_rows, first_query);
  attention_tiles::load_tile_async<kTile, qk_width>(k_tile, k_rows, 0);
  attention_mma::commit_async_copies();
  attention_tiles::load_tile_async<kTile, v_width>(v_tile, v_rows, 0);
  attention_mma::commit_async_copies();

  Accumulator out_tiles[v_tiles];  // [16, v_width] of this warp
  attention_mma::zero(out_tiles);
  RowSoftmax softmax;
  for (int key_tile = 0; key_tile <= query_tile; ++key_tile) {
    const bool last = key_tile == query_tile;
    attention_mma::wait_async_copies<1>();  // q and this k tile; v may still be in flight
    __syncthreads();
    Accumulator scores[kKeyTiles];  // [16, 64]
    attention_mma::zero(scores);
    attention_mma::multiply_by_rows<qk_chunks, kKeyTiles>(scores, q_tile, stride_of(qk_width), 16 * warp, k_tile,
                                                          stride_of(qk_width));
    __syncthreads();  // every warp is done with k_tile
    if (!last) {
      attention_tiles::load_tile_async<kTile, qk_width>(k_tile, k_rows, int64_t{key_tile + 1} * kTile);
      attention_mma::commit_async_copies();
    }
    online_softmax_step(scores, out_tiles, softmax, scale_log2, last, query_low, int64_t{key_tile} * kTile);
    if (last) {
      attention_mma::wait_async_copies<0>();
    } else {
      attention_mma::wait_async_copies<1>();  // this v tile; the next k tile may still be in flight
    }
    __syncthreads();
    attention_mma::multiply_accumulators_by_tile<kTile / 16, v_tiles>(out_tiles, scores, v_tile,
                                                                      stride_of(v_width));
    __syncthreads();  // every warp is done with v_tile
    if (!last) {
      attention_tiles::load_tile_async<kTile, v_width>(v_tile, v_rows, int64_t{key_tile + 1} * kTile);
      attention_mma::commit_async_copies();
    }
  }

  float row_sum[2] = {quad_sum(softmax.sum[0]), quad_sum(softmax.sum[1])};
  HeadRows<float> out_rows = attention_tiles::head_rows(out, batch_index, head, sequence, geometry.heads,
                                                        geometry.v_dim);
  attention_tiles::store_rows(out_rows, first_query + 16 * warp, out_tiles, 1.0f / row_sum[0], 1.0f / row_sum[1]);
  if (lane % 4 == 0) {
    float* head_lse = lse + (batch_index * geometry.heads + head) * sequence;
    for (int half = 0; half < 2; ++half) {
      int64_t query = query_low + 8 * half;
      if (query < sequence) head_lse[query] = (softmax.max[half] + log2f(row_sum[half])) * kLn2;
    }
  }
}

}  // namespace

cudaError_t attention_forward_bf16(float* out, float* lse, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                                   const AttentionGeometry& geometry, cudaStream_t stream) {
  return attention_widths::with_padded_widths(geometry.qk_dim, geometry.v_dim, [&](auto qk_width, auto v_width) {
    constexpr int qk = decltype(qk_width)::value, vw = decltype(v_width)::value;
    auto kernel = attention_forward_kernel<qk, vw>;
    constexpr int shared_bytes = forward_shared_bytes<qk, vw>();
    cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
    if (status != cudaSuccess) return status;
    dim3 grid(static_cast<unsigned int>((geometry.sequence + kTile - 1) / kTile),
              static_cast<unsigned int>(geometry.batch * geometry.heads));
    kernel<<<grid, kWarps * 32, shared_bytes, stream>>>(out, lse, reinterpret_cast<const __nv_bfloat16*>(q),
                                                        reinterpret_cast<const __nv_bfloat16*>(k),
                                                        reinterpret_cast<const __nv_bfloat16*>(v), geometry);
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
