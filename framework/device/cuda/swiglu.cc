#include "framework/device/cuda/swiglu.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda {
namespace {

// The dispatcher accepts fp32 and bf16 operands only.
kernels::SwigluElement element_of(DType dtype) {
  return dtype == DType::bf16 ? kernels::SwigluElement::bf16 : kernels::SwigluElement::f32;
}

}  // namespace

void swiglu_forward(const Tensor& out, const void* gate, const void* up, DType input_dtype, const SwigluRows& rows,
                    Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::swiglu_forward(out.raw(), element_of(out.dtype()), gate, up, element_of(input_dtype), rows,
                                       cuda_stream),
               "swiglu_forward");
}

void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate, const Tensor& up,
                        bool pow2_scales, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::swiglu_forward_fp8(out.raw(), &q.data<e4m3>()->bits, scales.data<float>(), gate.raw(),
                                           up.raw(), gate.size(0), gate.size(1), pow2_scales, cuda_stream),
               "swiglu_forward_fp8");
}

void swiglu_backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const void* gate,
                     const void* up, DType input_dtype, const SwigluRows& rows, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(d_out.device(), stream);
  check_launch(kernels::swiglu_backward(d_gate, d_up, element_of(gradient_dtype), d_out.data<float>(), gate, up,
                                        element_of(input_dtype), rows, cuda_stream),
               "swiglu_backward");
}

}  // namespace hai::cuda
