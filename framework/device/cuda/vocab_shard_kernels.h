#pragma once
// Launchers of the vocabulary-shard cross-entropy kernels behind framework/device/vocab_shard.h: one block of
// kThreads per row of the shard's logits [rows, classes] (classes = V_r, the shard's vocabulary rows, whose first is
// global id `first`): fp32 exponentials (expf), their sums in double. Each thread sums its share in a fixed order
// and the block adds the shares in a fixed order: the same bits every run. Targets are global ids, not
// range-checked: a target outside the shard contributes no target logit here.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// row_max [rows] <- logits [rows, classes] (-inf for classes == 0)
cudaError_t vocab_shard_row_max(float* row_max, const float* logits, int64_t rows, int64_t classes,
                                cudaStream_t stream);

// stats [3, rows]: sum_v exp(logit - row_max) as hi + lo fp32, and the target's logit where the shard holds the
// target (else 0) <- logits [rows, classes], row_max [rows], targets [rows]
cudaError_t vocab_shard_softmax_stats(float* stats, const float* logits, const float* row_max,
                                      const int32_t* targets, int64_t first, int64_t rows, int64_t classes,
                                      cudaStream_t stream);

// losses [rows] and, unless d_logits is null, d_logits [rows, classes] (fp32, may equal logits, or bf16 with
// bf16_gradient) <- logits, row_max [rows], stats [3, rows] (both reduced over the ranks), targets [rows]
cudaError_t vocab_shard_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                      const float* row_max, const float* stats, const int32_t* targets,
                                      int64_t first, float scale, int32_t ignore_index, int64_t rows,
                                      int64_t classes, cudaStream_t stream);

}  // namespace hai::cuda::kernels
