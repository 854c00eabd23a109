// Causal attention in fp32 on CUDA cores: one warp per row, lane l holding columns l, l + 32, ... (head widths up
// to 256), the same online softmax and recomputed probabilities as the CPU reference. Correct for every size; the
// fast path is the bf16 one. Also attention_output_dots, which both backward paths run first (and which rounds d_out
// to bf16 for the bf16 one).

#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kColumnsPerLane = 8;  // 256 / 32
constexpr int kWarpsPerBlock = kThreads / 32;

// One [B, S, H] row per warp: the row's (b, s, h) and the lane.
struct WarpRow {
  int64_t batch_index, position, head, row;
  int lane;
  bool valid;
};

__device__ inline WarpRow warp_row(const AttentionGeometry& geometry) {
  int64_t row = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  int64_t rows = geometry.batch * geometry.sequence * geometry.heads;
  int64_t head = row % geometry.heads, position = (row / geometry.heads) % geometry.sequence;
  return {row / (geometry.heads * geometry.sequence), position, head, row, static_cast<int>(threadIdx.x % 32),
          row < rows};
}

__device__ inline int64_t row_of(const AttentionGeometry& geometry, const WarpRow& row, int64_t position) {
  return (row.batch_index * geometry.sequence + position) * geometry.heads + row.head;
}
__device__ inline int64_t lse_index(const AttentionGeometry& geometry, const WarpRow& row, int64_t position) {
  return (row.batch_index * geometry.heads + row.head) * geometry.sequence + position;
}

// This lane's columns of a row of width `dim`, zero past it.
__device__ inline void load_columns(float (&values)[kColumnsPerLane], const float* row, int dim, int lane) {
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) values[c] = lane + 32 * c < dim ? row[lane + 32 * c] : 0.0f;
}

// dot(values, row) over the warp, returned to every lane.
__device__ inline float warp_dot(const float (&values)[kColumnsPerLane], const float* row, int dim, int lane) {
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) {
    if (lane + 32 * c < dim) sum += values[c] * row[lane + 32 * c];
  }
  return warp_sum(sum);
}

// accumulator += factor * row
__device__ inline void add_scaled(float (&accumulator)[kColumnsPerLane], float factor, const float* row, int dim,
                                  int lane) {
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) {
    if (lane + 32 * c < dim) accumulator[c] += factor * row[lane + 32 * c];
  }
}

__device__ inline void store_columns(float* row, const float (&values)[kColumnsPerLane], float factor, int dim,
                                     int lane) {
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) {
    if (lane + 32 * c < dim) row[lane + 32 * c] = factor * values[c];
  }
}

__global__ void forward_kernel(float* out, float* lse, const float* q, const float* k, const float* v,
                               AttentionGeometry geometry) {
  WarpRow row = warp_row(geometry);
  if (!row.valid) return;
  const int qk_dim = geometry.qk_dim, v_dim = geometry.v_dim;
  float query[kColumnsPerLane], accumulator[kColumnsPerLane] = {};
  load_columns(query, q + row.row * qk_dim, qk_dim, row.lane);
  float running_max = -INFINITY, running_sum = 0.0f;
  for (int64_t key = 0; key <= row.position; ++key) {
    int64_t key_row = row_of(geometry, row, key);
    float score = geometry.softmax_scale * warp_dot(query, k + key_row * qk_dim, qk_dim, row.lane);
    if (score > running_max) {
      float rescale = expf(running_max - score);  // 0 for the first key
      for (float& value : accumulator) value *= rescale;
      running_sum *= rescale;
      running_max = score;
    }
    float probability = expf(score - running_max);
    running_sum += probability;
    add_scaled(accumulator, probability, v + key_row * v_dim, v_dim, row.lane);
  }
  store_columns(out + row.row * v_dim, accumulator, 1.0f / running_sum, v_dim, row.lane);
  if (row.lane == 0) lse[lse_index(geometry, row, row.position)] = running_max + logf(running_sum);
}

// d_v[j] = sum_i P[i, j] d_out[i] and d_k[j] = scale * sum_i dS[i, j] q[i] over the queries i >= j.
__global__ void key_gradients_kernel(float* d_k, float* d_v, const float* d_q, const float* d_out, const float* q,
                                     const float* k, const float* v, const float* lse, AttentionGeometry geometry) {
  WarpRow row = warp_row(geometry);
  if (!row.valid) return;
  const int qk_dim = geometry.qk_dim, v_dim = geometry.v_dim;
  float key[kColumnsPerLane], value[kColumnsPerLane];
  float d_key[kColumnsPerLane] = {}, d_value[kColumnsPerLane] = {};
  load_columns(key, k + row.row * qk_dim, qk_dim, row.lane);
  load_columns(value, v + row.row * v_dim, v_dim, row.lane);
  for (int64_t query = row.position; query < geometry.sequence; ++query) {
    int64_t query_row = row_of(geometry, row, query);
    const float* q_row = q + query_row * qk_dim;
    const float* d_out_row = d_out + query_row * v_dim;
    float probability = expf(geometry.softmax_scale * warp_dot(key, q_row, qk_dim, row.lane) -
                             lse[lse_index(geometry, row, query)]);
    float d_probability = warp_dot(value, d_out_row, v_dim, row.lane);
    float d_score = probability * (d_probability - d_q[query_row * qk_dim]);  // D[query] stored in d_q
    add_scaled(d_value, probability, d_out_row, v_dim, row.lane);
    add_scaled(d_key, geometry.softmax_scale * d_score, q_row, qk_dim, row.lane);
  }
  store_columns(d_k + row.row * qk_dim, d_key, 1.0f, qk_dim, row.lane);
  store_columns(d_v + row.row * v_dim, d_value, 1.0f, v_dim, row.lane);
}

// d_q[i] = scale * sum_j dS[i, j] k[j] over the keys j <= i.
__global__ void query_gradients_kernel(float* d_q, const float* d_out, const float* q, const float* k,
                                       const float* v, const float* lse, AttentionGeometry geometry) {
  WarpRow row = warp_row(geometry);
  if (!row.valid) return;
  const int qk_dim = geometry.qk_dim, v_dim = geometry.v_dim;
  float query[kColumnsPerLane], d_output[kColumnsPerLane], d_query[kColumnsPerLane] = {};
  load_columns(query, q + row.row * qk_dim, qk_dim, row.lane);
  load_columns(d_output, d_out + row.row * v_dim, v_dim, row.lane);
  float output_dot = d_q[row.row * qk_dim];  // D, stored by attention_output_dots
  float row_lse = lse[lse_index(geometry, row, row.position)];
  for (int64_t key = 0; key <= row.position; ++key) {
    int64_t key_row = row_of(geometry, row, key);
    const float* k_row = k + key_row * qk_dim;
    float probability = expf(geometry.softmax_scale * warp_dot(query, k_row, qk_dim, row.lane) - row_lse);
    float d_probability = warp_dot(d_output, v + key_row * v_dim, v_dim, row.lane);
    add_scaled(d_query, geometry.softmax_scale * probability * (d_probability - output_dot), k_row, qk_dim,
               row.lane);
  }
  __syncwarp();  // every lane has read D before lane 0 overwrites it
  store_columns(d_q + row.row * qk_dim, d_query, 1.0f, qk_dim, row.lane);
}

// Element `index` of an fp32 or (with bf16) bf16 tensor, as fp32.
__device__ inline float value_at(const void* tensor, bool bf16, int64_t index) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(tensor)[index])
              : static_cast<const float*>(tensor)[index];
}

__global__ void output_dots_kernel(float* dots, int64_t dots_stride, __nv_bfloat16* rounded_d_out, const void* d_out,
                                   bool bf16_d_out, const void* out, bool bf16_out, AttentionGeometry geometry) {
  WarpRow row = warp_row(geometry);
  if (!row.valid) return;
  float d_output[kColumnsPerLane];
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) {
    int column = row.lane + 32 * c;
    bool inside = column < geometry.v_dim;
    d_output[c] = inside ? value_at(d_out, bf16_d_out, row.row * geometry.v_dim + column) : 0.0f;
    if (inside) sum += d_output[c] * value_at(out, bf16_out, row.row * geometry.v_dim + column);
  }
  float dot = warp_sum(sum);
  if (row.lane == 0) dots[row.row * dots_stride] = dot;
  if (rounded_d_out == nullptr) return;
#pragma unroll
  for (int c = 0; c < kColumnsPerLane; ++c) {
    int column = row.lane + 32 * c;
    if (column < geometry.v_dim) rounded_d_out[row.row * geometry.v_dim + column] = __float2bfloat16_rn(d_output[c]);
  }
}

// output_dots_kernel for bf16 d_out and out with d_v a multiple of 4 (nothing rounded): each lane reads 4
// neighbouring columns of both rows at a time (8-byte loads, a whole 128-column row per warp instruction), sums
// their products in column order, and the warp sums the lanes.
__global__ void output_dots_bf16_kernel(float* dots, int64_t dots_stride, const __nv_bfloat16* d_out,
                                        const __nv_bfloat16* out, AttentionGeometry geometry) {
  WarpRow row = warp_row(geometry);
  if (!row.valid) return;
  const __nv_bfloat16* d_out_row = d_out + row.row * geometry.v_dim;
  const __nv_bfloat16* out_row = out + row.row * geometry.v_dim;
  float sum = 0.0f;
  for (int column = 4 * row.lane; column < geometry.v_dim; column += 4 * 32) {
    Vector<__nv_bfloat16, 4> d_values = load_vector<4>(d_out_row + column);
    Vector<__nv_bfloat16, 4> values = load_vector<4>(out_row + column);
#pragma unroll
    for (int k = 0; k < 4; ++k) sum += __bfloat162float(d_values.values[k]) * __bfloat162float(values.values[k]);
  }
  float dot = warp_sum(sum);
  if (row.lane == 0) dots[row.row * dots_stride] = dot;
}

unsigned int blocks_for_rows(const AttentionGeometry& geometry) {
  int64_t rows = geometry.batch * geometry.sequence * geometry.heads;
  return static_cast<unsigned int>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

cudaError_t attention_forward_f32(float* out, float* lse, const float* q, const float* k, const float* v,
                                  const AttentionGeometry& geometry, cudaStream_t stream) {
  forward_kernel<<<blocks_for_rows(geometry), kThreads, 0, stream>>>(out, lse, q, k, v, geometry);
  return cudaGetLastError();
}

cudaError_t attention_backward_f32(float* d_q, float* d_k, float* d_v, const float* d_out, const float* q,
                                   const float* k, const float* v, const float* lse,
                                   const AttentionGeometry& geometry, cudaStream_t stream) {
  key_gradients_kernel<<<blocks_for_rows(geometry), kThreads, 0, stream>>>(d_k, d_v, d_q, d_out, q, k, v, lse,
                                                                           geometry);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  query_gradients_kernel<<<blocks_for_rows(geometry), kThreads, 0, stream>>>(d_q, d_out, q, k, v, lse, geometry);
  return cudaGetLastError();
}

cudaError_t attention_output_dots(float* dots, int64_t dots_stride, uint16_t* rounded_d_out, const void* d_out,
                                  bool bf16_d_out, const void* out, bool bf16_out, const AttentionGeometry& geometry,
                                  cudaStream_t stream) {
  bool vectors = rounded_d_out == nullptr && bf16_d_out && bf16_out && geometry.v_dim % 4 == 0 &&
                 vector_aligned<__nv_bfloat16, 4>(d_out) && vector_aligned<__nv_bfloat16, 4>(out);
  if (vectors) {
    output_dots_bf16_kernel<<<blocks_for_rows(geometry), kThreads, 0, stream>>>(
        dots, dots_stride, static_cast<const __nv_bfloat16*>(d_out), static_cast<const __nv_bfloat16*>(out),
        geometry);
    return cudaGetLastError();
  }
  output_dots_kernel<<<blocks_for_rows(geometry), kThreads, 0, stream>>>(
      dots, dots_stride, reinterpret_cast<__nv_bfloat16*>(rounded_d_out), d_out, bf16_d_out, out, bf16_out, geometry);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
