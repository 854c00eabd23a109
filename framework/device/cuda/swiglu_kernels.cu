#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda::kernels {
namespace {

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = gate[i];
    out[i] = g * sigmoid(g) * up[i];
  }
}

__device__ float widened(float x) { return x; }
__device__ float widened(uint16_t bf16_bits) { return __bfloat162float(__ushort_as_bfloat16(bf16_bits)); }

// Input: float, or uint16_t holding bf16 bits.
template <typename Input>
__global__ void swiglu_backward_kernel(float* d_gate, float* d_up, const float* d_out, const Input* gate,
                                       const Input* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = widened(gate[i]);
    float s = sigmoid(g);
    // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
    d_gate[i] = d_out[i] * widened(up[i]) * s * (1.0f + g * (1.0f - s));
    d_up[i] = d_out[i] * g * s;
  }
}

}  // namespace

cudaError_t swiglu_forward(float* out, const float* gate, const float* up, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  swiglu_forward_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, gate, up, n);
  return cudaGetLastError();
}

namespace {

template <typename Input>
cudaError_t launch_swiglu_backward(float* d_gate, float* d_up, const float* d_out, const Input* gate,
                                   const Input* up, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  swiglu_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(d_gate, d_up, d_out, gate, up, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t swiglu_backward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up,
                            int64_t n, cudaStream_t stream) {
  return launch_swiglu_backward(d_gate, d_up, d_out, gate, up, n, stream);
}

cudaError_t swiglu_backward(float* d_gate, float* d_up, const float* d_out, const uint16_t* gate, const uint16_t* up,
                            int64_t n, cudaStream_t stream) {
  return launch_swiglu_backward(d_gate, d_up, d_out, gate, up, n, stream);
}

}  // namespace hai::cuda::kernels
