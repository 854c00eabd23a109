#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda::kernels {
namespace {

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Element types: float, or __nv_bfloat16 (read widened, written rounded to nearest even).
__device__ float widened(float x) { return x; }
__device__ float widened(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename Input, typename Output>
__global__ void swiglu_forward_kernel(Output* out, const Input* gate, const Input* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = widened(gate[i]);
    store(out + i, g * sigmoid(g) * widened(up[i]));
  }
}

template <typename Input, typename Gradient>
__global__ void swiglu_backward_kernel(Gradient* d_gate, Gradient* d_up, const float* d_out, const Input* gate,
                                       const Input* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = widened(gate[i]);
    float s = sigmoid(g);
    // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
    store(d_gate + i, d_out[i] * widened(up[i]) * s * (1.0f + g * (1.0f - s)));
    store(d_up + i, d_out[i] * g * s);
  }
}

// Calls launch(Input{}, Output{}) with the element types the two SwigluElements name.
template <typename Launch>
cudaError_t with_elements(SwigluElement input, SwigluElement output, Launch&& launch) {
  if (input == SwigluElement::bf16) {
    return output == SwigluElement::bf16 ? launch(__nv_bfloat16{}, __nv_bfloat16{}) : launch(__nv_bfloat16{}, 0.0f);
  }
  return output == SwigluElement::bf16 ? launch(0.0f, __nv_bfloat16{}) : launch(0.0f, 0.0f);
}

}  // namespace

cudaError_t swiglu_forward(void* out, SwigluElement out_element, const void* gate, const void* up,
                           SwigluElement input_element, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_elements(input_element, out_element, [&](auto input, auto output) {
    using Input = decltype(input);
    using Output = decltype(output);
    swiglu_forward_kernel<<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<Output*>(out), static_cast<const Input*>(gate), static_cast<const Input*>(up), n);
    return cudaGetLastError();
  });
}

cudaError_t swiglu_backward(void* d_gate, void* d_up, SwigluElement gradient_element, const float* d_out,
                            const void* gate, const void* up, SwigluElement input_element, int64_t n,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_elements(input_element, gradient_element, [&](auto input, auto gradient) {
    using Input = decltype(input);
    using Gradient = decltype(gradient);
    swiglu_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<Gradient*>(d_gate),
                                                                 static_cast<Gradient*>(d_up), d_out,
                                                                 static_cast<const Input*>(gate),
                                                                 static_cast<const Input*>(up), n);
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
