#include "framework/device/cuda/swiglu.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda {
namespace {

const uint16_t* bf16_bits(const Tensor& tensor) { return static_cast<const uint16_t*>(tensor.raw()); }

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::swiglu_forward(out.data<float>(), gate.data<float>(), up.data<float>(), gate.numel(),
                                       cuda_stream),
               "swiglu_forward");
}

void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(gate.device(), stream);
  if (gate.dtype() == DType::bf16) {
    check_launch(kernels::swiglu_backward(d_gate.data<float>(), d_up.data<float>(), d_out.data<float>(),
                                          bf16_bits(gate), bf16_bits(up), gate.numel(), cuda_stream),
                 "swiglu_backward");
    return;
  }
  check_launch(kernels::swiglu_backward(d_gate.data<float>(), d_up.data<float>(), d_out.data<float>(),
                                        gate.data<float>(), up.data<float>(), gate.numel(), cuda_stream),
               "swiglu_backward");
}

}  // namespace hai::cuda
