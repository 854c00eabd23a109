#pragma once
// Launchers of the SwiGLU kernels behind framework/device/swiglu.h; n elements, each returns the launch's status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out = silu(gate) * up
cudaError_t swiglu_forward(float* out, const float* gate, const float* up, int64_t n, cudaStream_t stream);

// d_gate = d_out * up * silu'(gate), d_up = d_out * silu(gate); gate and up fp32, or bf16 given as their bits.
cudaError_t swiglu_backward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up,
                            int64_t n, cudaStream_t stream);
cudaError_t swiglu_backward(float* d_gate, float* d_up, const float* d_out, const uint16_t* gate, const uint16_t* up,
                            int64_t n, cudaStream_t stream);

}  // namespace hai::cuda::kernels
