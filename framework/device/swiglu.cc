#include "framework/device/swiglu.h"

#include "framework/device/cast.h"
#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/swiglu.cu.
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
#endif

namespace hai {
namespace {

// Every tensor [N, F] like reference, on its device, of the given dtype.
void check_operands(std::initializer_list<const Tensor*> tensors, const Tensor& reference, DType dtype) {
  HAI_CHECK(reference.rank() == 2, "swiglu operands must be [N, F], got {}", reference.str());
  for (const Tensor* tensor : tensors) {
    check_shape(*tensor, reference.shape(), "swiglu operand");
    check_dtype(*tensor, dtype, "swiglu operand");
    check_same_device(*tensor, reference, "swiglu");
  }
}

void check_fp32_or_bf16(const Tensor& tensor, const char* what) {
  HAI_CHECK(tensor.dtype() == DType::f32 || tensor.dtype() == DType::bf16, "swiglu: {} must be fp32 or bf16, got {}",
            what, dtype_name(tensor.dtype()));
}

// The checked operands of a SwiGLU on any layout.
struct SwigluOperands {
  const void* gate;
  const void* up;
  DType input_dtype;
  SwigluRows rows;
};

// gate, up: [N, F] separate tensors.
SwigluOperands separate(const Tensor& gate, const Tensor& up) {
  check_fp32_or_bf16(gate, "gate and up");
  check_operands({&gate, &up}, gate, gate.dtype());
  int64_t width = gate.size(1);
  return {gate.raw(), up.raw(), gate.dtype(), {gate.size(0), width, width, width}};
}

// gate_up: [N, 2F], gate and up its halves.
SwigluOperands halves(const Tensor& gate_up) {
  check_fp32_or_bf16(gate_up, "gate_up");
  HAI_CHECK(gate_up.rank() == 2 && gate_up.size(1) % 2 == 0, "swiglu: gate_up must be [N, 2F], got {}",
            gate_up.str());
  int64_t width = gate_up.size(1) / 2;
  const char* first = static_cast<const char*>(gate_up.raw());
  return {first, first + width * dtype_size(gate_up.dtype()), gate_up.dtype(),
          {gate_up.size(0), width, 2 * width, 2 * width}};
}

void forward(const Tensor& out, const SwigluOperands& in, [[maybe_unused]] Stream stream) {
  check_fp32_or_bf16(out, "out");
  check_shape(out, Shape{in.rows.rows, in.rows.width}, "swiglu out");
  if (out.device().is_cpu()) return cpu::swiglu_forward(out, in.gate, in.up, in.input_dtype, in.rows);
#ifdef HAI_WITH_CUDA
  return cuda::swiglu_forward(out, in.gate, in.up, in.input_dtype, in.rows, stream);
#else
  throw_no_backend("swiglu_forward", out.device());
#endif
}

// d_gate and d_up (rows gradient_stride apart, of gradient_dtype) <- d_out, in.
void backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const SwigluOperands& in,
              [[maybe_unused]] Stream stream) {
  check_shape(d_out, Shape{in.rows.rows, in.rows.width}, "swiglu d_out");
  check_dtype(d_out, DType::f32, "swiglu d_out");
  if (d_out.device().is_cpu()) {
    return cpu::swiglu_backward(d_gate, d_up, gradient_dtype, d_out, in.gate, in.up, in.input_dtype, in.rows);
  }
#ifdef HAI_WITH_CUDA
  return cuda::swiglu_backward(d_gate, d_up, gradient_dtype, d_out, in.gate, in.up, in.input_dtype, in.rows, stream);
#else
  throw_no_backend("swiglu_backward", d_out.device());
#endif
}

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream) {
  check_same_device(out, gate, "swiglu");
  forward(out, separate(gate, up), stream);
}

void swiglu_forward(const Tensor& out, const Tensor& gate_up, Stream stream) {
  check_same_device(out, gate_up, "swiglu");
  forward(out, halves(gate_up), stream);
}

void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate,
                        const Tensor& up, bool pow2_scales, [[maybe_unused]] Stream stream) {
  check_operands({&out, &gate, &up}, gate, DType::bf16);
  check_operands({&q}, gate, DType::e4m3);
  check_shape(scales, Shape{gate.size(0), (gate.size(1) + kFp8TileSize - 1) / kFp8TileSize}, "swiglu fp8 scales");
  check_dtype(scales, DType::f32, "swiglu fp8 scales");
  check_same_device(scales, gate, "swiglu");
  if (gate.device().is_cpu()) {
    OwnedTensor activation(gate.shape(), DType::f32);  // [N, F]
    forward(activation, separate(gate, up), stream);
    quantize_1x128(q, scales, activation, pow2_scales);
    return cast_tensor(out, activation);
  }
#ifdef HAI_WITH_CUDA
  return cuda::swiglu_forward_fp8(out, q, scales, gate, up, pow2_scales, stream);
#else
  throw_no_backend("swiglu_forward_fp8", gate.device());
#endif
}

void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream) {
  SwigluOperands in = separate(gate, up);
  check_fp32_or_bf16(d_gate, "d_gate and d_up");
  check_operands({&d_gate, &d_up}, gate, d_gate.dtype());
  check_same_device(d_out, gate, "swiglu");
  backward(d_gate.raw(), d_up.raw(), d_gate.dtype(), d_out, in, stream);
}

void swiglu_backward(const Tensor& d_gate_up, const Tensor& d_out, const Tensor& gate_up, Stream stream) {
  SwigluOperands in = halves(gate_up);
  check_fp32_or_bf16(d_gate_up, "d_gate_up");
  check_shape(d_gate_up, gate_up.shape(), "swiglu d_gate_up");
  check_same_device(d_gate_up, gate_up, "swiglu");
  check_same_device(d_out, gate_up, "swiglu");
  char* first = static_cast<char*>(d_gate_up.raw());
  backward(first, first + in.rows.width * dtype_size(d_gate_up.dtype()), d_gate_up.dtype(), d_out, in, stream);
}

}  // namespace hai
