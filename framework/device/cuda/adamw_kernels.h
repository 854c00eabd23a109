#pragma once
// Launcher of the AdamW kernel behind framework/device/adamw.h. The host computes the step's scalars exactly as the
// CPU op does; the kernel rounds each operation separately (no fused multiply-add), as the CPU op does.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct AdamWScalars {
  float beta1;
  float beta2;
  float eps;
  float step_size;               // lr / (1 - beta1^step)
  float bias_correction2_sqrt;   // sqrt(1 - beta2^step)
  float decay;                   // 1 - lr * weight_decay
};

// params [n] (updated), exp_avg / exp_avg_sq [n] (updated; fp32, or bf16 bits when bf16_moments) <- grads [n]
cudaError_t adamw_step(float* params, const float* grads, void* exp_avg, void* exp_avg_sq, bool bf16_moments,
                       const AdamWScalars& scalars, int64_t n, cudaStream_t stream);

}  // namespace hai::cuda::kernels
