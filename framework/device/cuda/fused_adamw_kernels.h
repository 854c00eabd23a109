#pragma once
// Launcher of the multi-tensor AdamW kernel behind framework/device/fused_adamw.h: one block per run of the
// segment table; a run whose pointers all allow it is read and written 4 elements at a time (16-byte fp32 and
// 8-byte 16-bit accesses), the rest element by element. Every element's arithmetic is adamw_element.cuh's.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/device/cuda/adamw_kernels.h"

namespace hai::cuda::kernels {

enum class ComputeCopy { none, bf16, f16 };

struct FusedAdamWOperands {
  float* values;              // [N]
  void* compute;              // [N] bf16 or fp16 bits, null with ComputeCopy::none
  const float* grads;         // [M]
  void* exp_avg;              // [M] fp32, or bf16 bits when bf16_moments
  void* exp_avg_sq;           // [M] like exp_avg
  const int64_t* runs;        // [run_count, 4] i64: value_offset, state_offset, numel, weight_decay
  int64_t run_count;
  const float* gradient_scale;  // [1] on the device, read by the kernel; null: the launch's host factor
};

// scalars.decay applies to the runs whose weight_decay is 1; the gradients are multiplied by operands.gradient_scale[0]
// or else gradient_scale; a NaN factor leaves everything as it is (a skipped step).
cudaError_t fused_adamw_step(const FusedAdamWOperands& operands, ComputeCopy compute_copy, bool bf16_moments,
                             const AdamWScalars& scalars, float gradient_scale, cudaStream_t stream);

}  // namespace hai::cuda::kernels
