#pragma once
// Launchers of the embedding kernels behind framework/device/embedding.h and the embedding shard of
// framework/device/vocab_shard.h. Ids are not range-checked on the host
// (that would synchronise): an id outside [0, vocab) gives a NaN row in the forward and is skipped in the backward.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out [tokens, width] <- table [vocab, width], ids [tokens]
cudaError_t embedding_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t vocab,
                              int64_t width, cudaStream_t stream);

// d_table [rows, width] (the ids [first, first + rows); first 0, rows = vocab for the whole table) += scatter of
// d_out [tokens, width] by ids [tokens], ids outside the rows skipped; deterministic: the tokens are sorted by id (a
// stable radix sort) and each id's row adds its tokens' rows in their order, as the CPU op does.
// workspace: embedding_backward_workspace_bytes(tokens) bytes of device memory, 256-byte aligned.
cudaError_t embedding_backward_workspace_bytes(int64_t tokens, int64_t* bytes);
cudaError_t embedding_shard_backward(float* d_table, const float* d_out, const int32_t* ids, int64_t tokens,
                                     int64_t first, int64_t rows, int64_t width, void* workspace,
                                     cudaStream_t stream);

// out [tokens, width] <- the rows [rows, width] of a shard of a vocabulary-parallel table (framework/device/
// vocab_shard.h) holding the ids [first, first + rows): 0 rows for ids outside the shard.
cudaError_t embedding_shard_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t first,
                                    int64_t rows, int64_t width, cudaStream_t stream);

}  // namespace hai::cuda::kernels
