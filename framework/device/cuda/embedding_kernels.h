#pragma once
// Launchers of the embedding kernels behind framework/device/embedding.h. Ids are not range-checked on the host
// (that would synchronise): an id outside [0, vocab) gives a NaN row in the forward and is skipped in the backward.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out [tokens, width] <- table [vocab, width], ids [tokens]
cudaError_t embedding_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t vocab,
                              int64_t width, cudaStream_t stream);

// d_table [vocab, width] += scatter of d_out [tokens, width] by ids [tokens]. NOTE: atomic adds, so repeated ids
// add up in an unspecified order (not bitwise deterministic).
cudaError_t embedding_backward(float* d_table, const float* d_out, const int32_t* ids, int64_t tokens, int64_t vocab,
                               int64_t width, cudaStream_t stream);

}  // namespace hai::cuda::kernels
