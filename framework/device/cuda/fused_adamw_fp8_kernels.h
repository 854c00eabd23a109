#pragma once
// Launcher of the kernel behind framework/device/fused_adamw_fp8.h: one block per 128x128 tile of a batch of
// weights; the block updates the tile's elements with AdamW (adamw_element.cuh's arithmetic) and quantises the
// updated values from its registers into both FP8 copies (quantize_weight_batch's bits), so the values are read once.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/device/cuda/adamw_kernels.h"
#include "framework/device/cuda/fp8_quantize_kernels.h"

namespace hai::cuda::kernels {

struct FusedAdamWFp8Operands {
  const Fp8WeightEntry* weights;  // [count], first_tile ascending; each x is the weight's values (updated)
  const int64_t* states;          // [count, 2] i64: the weight's first gradient/moment element, weight_decay 0 or 1
  int64_t count;
  int64_t tiles;                  // 128x128 tiles of all weights
  const float* grads;             // [M]
  void* exp_avg;                  // [M] fp32, or bf16 bits when bf16_moments
  void* exp_avg_sq;               // [M] like exp_avg
  const float* gradient_scale;    // [1] on the device, read by the kernel; null: the launch's host factor
};

// scalars.decay applies to the weights whose weight_decay is 1; a NaN gradient scale leaves everything as it is.
cudaError_t fused_adamw_fp8_step(const FusedAdamWFp8Operands& operands, bool bf16_moments, const AdamWScalars& scalars,
                                 float gradient_scale, cudaStream_t stream);

}  // namespace hai::cuda::kernels
