#pragma once
// Launchers of the cross-entropy kernels behind framework/device/cross_entropy.h: one block per row of logits, in
// fp32, no buffer beyond the logits. A row of up to 32768 classes is held in registers and read once (16-byte loads,
// its maximum, then its sum of exponentials, then its gradients from the registers); a longer one is read once per
// pass. Each thread sums its share in a fixed order, the block adds the shares in a fixed order: the same bits every
// run, and the forward's losses are those of the backward. Targets are not range-checked on the host: a target
// outside [0, classes) that is not ignore_index gives a NaN loss / NaN row.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// losses [rows] <- logits [rows, classes], targets [rows]
cudaError_t cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int32_t ignore_index,
                                  int64_t rows, int64_t classes, cudaStream_t stream);

// d_logits [rows, classes] = (softmax - onehot) * scale <- logits (d_logits may equal logits), targets [rows]
cudaError_t cross_entropy_backward(float* d_logits, const float* logits, const int32_t* targets, float scale,
                                   int32_t ignore_index, int64_t rows, int64_t classes, cudaStream_t stream);

// Both from one softmax per row: losses [rows] (unless null) and d_logits [rows, classes], fp32 (may equal logits)
// or bf16 with bf16_gradient.
cudaError_t cross_entropy_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                        const int32_t* targets, float scale, int32_t ignore_index, int64_t rows,
                                        int64_t classes, cudaStream_t stream);

}  // namespace hai::cuda::kernels
