#include "framework/device/swiglu.h"

#include "framework/device/cast.h"
#include "framework/device/cpu/swiglu.h"
#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/swiglu.h"
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

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, [[maybe_unused]] Stream stream) {
  check_fp32_or_bf16(gate, "gate and up");
  check_fp32_or_bf16(out, "out");
  check_operands({&gate, &up}, gate, gate.dtype());
  check_operands({&out}, gate, out.dtype());
  if (out.device().is_cpu()) return cpu::swiglu_forward(out, gate, up);
#ifdef HAI_WITH_CUDA
  return cuda::swiglu_forward(out, gate, up, stream);
#else
  throw_no_backend("swiglu_forward", out.device());
#endif
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
    cpu::swiglu_forward(activation, gate, up);
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
                     const Tensor& up, [[maybe_unused]] Stream stream) {
  check_fp32_or_bf16(gate, "gate and up");
  check_fp32_or_bf16(d_gate, "d_gate and d_up");
  check_operands({&d_out}, gate, DType::f32);
  check_operands({&gate, &up}, gate, gate.dtype());
  check_operands({&d_gate, &d_up}, gate, d_gate.dtype());
  if (gate.device().is_cpu()) return cpu::swiglu_backward(d_gate, d_up, d_out, gate, up);
#ifdef HAI_WITH_CUDA
  return cuda::swiglu_backward(d_gate, d_up, d_out, gate, up, stream);
#else
  throw_no_backend("swiglu_backward", gate.device());
#endif
}

}  // namespace hai
