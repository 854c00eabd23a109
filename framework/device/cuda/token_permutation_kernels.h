#pragma once
// Launchers of the token permutation kernels behind framework/device/token_permutation.h (T tokens, K experts per
// token, D hidden width; positions [T, K] of a routing plan). Each rounds like the CPU op: sums over k run in
// ascending k, one rounded operation at a time.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// The element type of sorted rows that may be fp32 or bf16 (passed as their bits).
enum class RowElement { f32, bf16 };

struct PermutationShape {
  int64_t tokens;             // T
  int64_t experts_per_token;  // K
  int64_t width;              // D
};

// x_sorted [T * K, D] <- x [T, D]: x_sorted[positions[t, k]] = x[t], rows of D elements of element_bytes (1, 2 or 4)
cudaError_t permute_tokens(void* x_sorted, const void* x, int64_t element_bytes, const int32_t* positions,
                           const PermutationShape& shape, cudaStream_t stream);

// d_x [T, D] = sum_k d_x_sorted[positions[t, k]]
cudaError_t permute_tokens_backward(float* d_x, const float* d_x_sorted, const int32_t* positions,
                                    const PermutationShape& shape, cudaStream_t stream);

// out [T, D] = addend[t] + sum_k topk_weights[t, k] * y_sorted[positions[t, k]]; addend [T, D] (not overlapping out)
// or null (then 0)
cudaError_t unpermute_tokens(float* out, const void* y_sorted, RowElement y_element, const float* topk_weights,
                             const float* addend, const int32_t* positions, const PermutationShape& shape,
                             cudaStream_t stream);

// d_y_sorted[positions[t, k]] = topk_weights[t, k] * d_out[t]; d_topk_weights[t, k] = dot(d_out[t], y_sorted[...])
// (the dot product sums each lane's strided pieces, then the lanes in a warp's tree: not in the CPU's order, and
// in another order when the rows do not take 16-byte pieces).
cudaError_t unpermute_tokens_backward(void* d_y_sorted, RowElement d_y_element, float* d_topk_weights,
                                      const float* d_out, const void* y_sorted, RowElement y_element,
                                      const float* topk_weights, const int32_t* positions,
                                      const PermutationShape& shape, cudaStream_t stream);

}  // namespace hai::cuda::kernels
