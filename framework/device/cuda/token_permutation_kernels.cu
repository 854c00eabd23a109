#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/token_permutation_kernels.h"

namespace hai::cuda::kernels {
namespace {

// One block per sorted row, copying the token's row in pieces (16 bytes where rows and pointers allow, else 2 where
// the rows allow, else 1: e4m3 rows of odd width).
template <typename Piece>
__global__ void permute_kernel(Piece* x_sorted, const Piece* x, const int32_t* sources, int64_t experts_per_token,
                               int64_t pieces_per_row) {
  int64_t row = blockIdx.x;
  const Piece* token = x + (sources[row] / experts_per_token) * pieces_per_row;
  Piece* sorted = x_sorted + row * pieces_per_row;
  for (int64_t i = threadIdx.x; i < pieces_per_row; i += blockDim.x) sorted[i] = token[i];
}

// One block per token: d_x[token] = the sum of its experts' rows of d_x_sorted, in the order of its experts.
__global__ void permute_backward_kernel(float* d_x, const float* d_x_sorted, const int32_t* positions,
                                        PermutationShape shape) {
  int64_t token = blockIdx.x;
  const int32_t* token_positions = positions + token * shape.experts_per_token;  // [K]
  float* d_token = d_x + token * shape.width;                                   // [D]
  for (int64_t d = threadIdx.x; d < shape.width; d += blockDim.x) {
    float sum = 0.0f;
    for (int64_t k = 0; k < shape.experts_per_token; ++k) {
      sum = __fadd_rn(sum, d_x_sorted[token_positions[k] * shape.width + d]);
    }
    d_token[d] = sum;
  }
}

__device__ float widened(float x) { return x; }
__device__ float widened(uint16_t bf16_bits) { return __bfloat162float(__ushort_as_bfloat16(bf16_bits)); }

// One block per token: out[token] = the weighted sum of its experts' rows, in the order of its experts. Rows:
// float, or uint16_t holding bf16 bits (widened exactly).
template <typename Rows>
__global__ void unpermute_kernel(float* out, const Rows* y_sorted, const float* topk_weights,
                                 const int32_t* positions, PermutationShape shape) {
  int64_t token = blockIdx.x;
  const int32_t* token_positions = positions + token * shape.experts_per_token;  // [K]
  const float* token_weights = topk_weights + token * shape.experts_per_token;  // [K]
  float* out_token = out + token * shape.width;                                 // [D]
  for (int64_t d = threadIdx.x; d < shape.width; d += blockDim.x) {
    float sum = 0.0f;
    for (int64_t k = 0; k < shape.experts_per_token; ++k) {
      float y = widened(y_sorted[token_positions[k] * shape.width + d]);
      sum = __fadd_rn(sum, __fmul_rn(token_weights[k], y));
    }
    out_token[d] = sum;
  }
}

__device__ void store(float* out, float value) { *out = value; }
__device__ void store(uint16_t* out_bf16_bits, float value) {
  *out_bf16_bits = __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// One block per assignment (a token's k-th expert), reading the token's d_out row once for both gradients:
// d_y_sorted[row] = weight * d_out[token] (Gradient: float, or uint16_t for bf16 bits, rounded once) and
// d_topk_weights[assignment] = dot(d_out[token], y_sorted[row]). Rows: float, or uint16_t holding bf16 bits.
template <typename Gradient, typename Rows>
__global__ void unpermute_backward_kernel(Gradient* d_y_sorted, float* d_topk_weights, const float* d_out,
                                          const Rows* y_sorted, const float* topk_weights, const int32_t* positions,
                                          PermutationShape shape) {
  __shared__ float scratch[32];
  int64_t assignment = blockIdx.x;
  const float* d_token = d_out + (assignment / shape.experts_per_token) * shape.width;  // [D]
  int64_t row = positions[assignment];
  const Rows* y_row = y_sorted + row * shape.width;   // [D]
  Gradient* d_y_row = d_y_sorted + row * shape.width;  // [D]
  float weight = topk_weights[assignment];
  float dot = 0.0f;
  for (int64_t d = threadIdx.x; d < shape.width; d += blockDim.x) {
    float d_value = d_token[d], y = widened(y_row[d]);
    store(d_y_row + d, weight * d_value);
    dot += d_value * y;
  }
  dot = block_sum(dot, scratch);
  if (threadIdx.x == 0) d_topk_weights[assignment] = dot;
}

}  // namespace

cudaError_t permute_tokens(void* x_sorted, const void* x, int64_t element_bytes, const int32_t* sources,
                           const PermutationShape& shape, cudaStream_t stream) {
  int64_t rows = shape.tokens * shape.experts_per_token, row_bytes = shape.width * element_bytes;
  if (rows == 0 || row_bytes == 0) return cudaSuccess;
  auto aligned = [](const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; };
  if (row_bytes % 16 == 0 && aligned(x_sorted) && aligned(x)) {
    permute_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<uint4*>(x_sorted), static_cast<const uint4*>(x), sources, shape.experts_per_token, row_bytes / 16);
  } else if (row_bytes % 2 == 0) {
    permute_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<uint16_t*>(x_sorted), static_cast<const uint16_t*>(x), sources, shape.experts_per_token,
        row_bytes / 2);
  } else {
    permute_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<uint8_t*>(x_sorted), static_cast<const uint8_t*>(x), sources, shape.experts_per_token,
        row_bytes);
  }
  return cudaGetLastError();
}

cudaError_t permute_tokens_backward(float* d_x, const float* d_x_sorted, const int32_t* positions,
                                    const PermutationShape& shape, cudaStream_t stream) {
  if (shape.tokens * shape.width == 0) return cudaSuccess;
  permute_backward_kernel<<<static_cast<unsigned int>(shape.tokens), kThreads, 0, stream>>>(d_x, d_x_sorted,
                                                                                           positions, shape);
  return cudaGetLastError();
}

namespace {

template <typename Rows>
cudaError_t launch_unpermute_tokens(float* out, const Rows* y_sorted, const float* topk_weights,
                                    const int32_t* positions, const PermutationShape& shape, cudaStream_t stream) {
  if (shape.tokens * shape.width == 0) return cudaSuccess;
  unpermute_kernel<<<static_cast<unsigned int>(shape.tokens), kThreads, 0, stream>>>(out, y_sorted, topk_weights,
                                                                                    positions, shape);
  return cudaGetLastError();
}

}  // namespace

cudaError_t unpermute_tokens(float* out, const void* y_sorted, RowElement y_element, const float* topk_weights,
                             const int32_t* positions, const PermutationShape& shape, cudaStream_t stream) {
  if (y_element == RowElement::bf16) {
    return launch_unpermute_tokens(out, static_cast<const uint16_t*>(y_sorted), topk_weights, positions, shape,
                                   stream);
  }
  return launch_unpermute_tokens(out, static_cast<const float*>(y_sorted), topk_weights, positions, shape, stream);
}

namespace {

template <typename Gradient, typename Rows>
cudaError_t launch_unpermute_tokens_backward(Gradient* d_y_sorted, float* d_topk_weights, const float* d_out,
                                             const Rows* y_sorted, const float* topk_weights,
                                             const int32_t* positions, const PermutationShape& shape,
                                             cudaStream_t stream) {
  int64_t assignments = shape.tokens * shape.experts_per_token;
  if (assignments == 0) return cudaSuccess;
  unpermute_backward_kernel<<<static_cast<unsigned int>(assignments), kThreads, 0, stream>>>(
      d_y_sorted, d_topk_weights, d_out, y_sorted, topk_weights, positions, shape);
  return cudaGetLastError();
}

template <typename Gradient>
cudaError_t unpermute_backward_with_gradient(Gradient* d_y_sorted, float* d_topk_weights, const float* d_out,
                                             const void* y_sorted, RowElement y_element, const float* topk_weights,
                                             const int32_t* positions, const PermutationShape& shape,
                                             cudaStream_t stream) {
  if (y_element == RowElement::bf16) {
    return launch_unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, static_cast<const uint16_t*>(y_sorted),
                                            topk_weights, positions, shape, stream);
  }
  return launch_unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, static_cast<const float*>(y_sorted),
                                          topk_weights, positions, shape, stream);
}

}  // namespace

cudaError_t unpermute_tokens_backward(void* d_y_sorted, RowElement d_y_element, float* d_topk_weights,
                                      const float* d_out, const void* y_sorted, RowElement y_element,
                                      const float* topk_weights, const int32_t* positions,
                                      const PermutationShape& shape, cudaStream_t stream) {
  if (d_y_element == RowElement::bf16) {
    return unpermute_backward_with_gradient(static_cast<uint16_t*>(d_y_sorted), d_topk_weights, d_out, y_sorted,
                                            y_element, topk_weights, positions, shape, stream);
  }
  return unpermute_backward_with_gradient(static_cast<float*>(d_y_sorted), d_topk_weights, d_out, y_sorted, y_element,
                                          topk_weights, positions, shape, stream);
}

}  // namespace hai::cuda::kernels
