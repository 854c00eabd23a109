#include "framework/device/cuda/swiglu.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda {
namespace {

// The dispatcher accepts fp32 and bf16 operands only.
kernels::SwigluElement element_of(const Tensor& tensor) {
  return tensor.dtype() == DType::bf16 ? kernels::SwigluElement::bf16 : kernels::SwigluElement::f32;
}

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::swiglu_forward(out.raw(), element_of(out), gate.raw(), up.raw(), element_of(gate),
                                       gate.numel(), cuda_stream),
               "swiglu_forward");
}

void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate, const Tensor& up,
                        bool pow2_scales, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::swiglu_forward_fp8(out.raw(), &q.data<e4m3>()->bits, scales.data<float>(), gate.raw(),
                                           up.raw(), gate.size(0), gate.size(1), pow2_scales, cuda_stream),
               "swiglu_forward_fp8");
}

void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(gate.device(), stream);
  check_launch(kernels::swiglu_backward(d_gate.raw(), d_up.raw(), element_of(d_gate), d_out.data<float>(),
                                        gate.raw(), up.raw(), element_of(gate), gate.numel(), cuda_stream),
               "swiglu_backward");
}

}  // namespace hai::cuda
