#include "framework/device/attention.h"

#include "framework/device/cpu/attention.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/attention.h"
#endif

namespace hai {
namespace {

// Checks q, k: [B, S, H, d_qk], v, out: [B, S, H, d_v], lse: [B, H, S] on one device; q, k, v all fp32 or all bf16,
// lse fp32, out fp32 (or bf16 with bf16 inputs).
// out or d_out: fp32, or bf16 when q is.
void check_output_dtype(const Tensor& tensor, const Tensor& q, const char* what) {
  HAI_CHECK(tensor.dtype() == DType::f32 || (tensor.dtype() == DType::bf16 && q.dtype() == DType::bf16),
            "{} must be fp32, or bf16 with bf16 q, k, v; got {} with q {}", what, tensor.str(), q.str());
}

void check_attention_operands(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& lse) {
  HAI_CHECK(q.rank() == 4, "attention q must be [B, S, H, d_qk], got {}", q.str());
  HAI_CHECK(v.rank() == 4, "attention v must be [B, S, H, d_v], got {}", v.str());
  int64_t batch = q.size(0), sequence = q.size(1), heads = q.size(2);
  check_shape(k, q.shape(), "attention k");
  check_shape(v, Shape{batch, sequence, heads, v.size(3)}, "attention v");
  check_shape(out, v.shape(), "attention out");
  check_shape(lse, Shape{batch, heads, sequence}, "attention lse");
  HAI_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::bf16, "attention q must be fp32 or bf16, got {}", q.str());
  check_dtype(k, q.dtype(), "attention k");
  check_dtype(v, q.dtype(), "attention v");
  check_output_dtype(out, q, "attention out");
  check_dtype(lse, DType::f32, "attention lse");
  for (const Tensor* tensor : {&k, &v, &out, &lse}) check_same_device(*tensor, q, "attention");
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale, [[maybe_unused]] Stream stream) {
  check_attention_operands(q, k, v, out, lse);
  if (q.device().is_cpu()) return cpu::attention_forward(out, lse, q, k, v, softmax_scale);
#ifdef HAI_WITH_CUDA
  return cuda::attention_forward(out, lse, q, k, v, softmax_scale, stream);
#else
  throw_no_backend("attention_forward", q.device());
#endif
}

void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale, [[maybe_unused]] Stream stream) {
  check_attention_operands(q, k, v, out, lse);
  check_shape(d_q, q.shape(), "attention d_q");
  check_shape(d_k, k.shape(), "attention d_k");
  check_shape(d_v, v.shape(), "attention d_v");
  check_shape(d_out, out.shape(), "attention d_out");
  check_output_dtype(d_out, q, "attention d_out");
  for (const Tensor* tensor : {&d_q, &d_k, &d_v, &d_out}) check_same_device(*tensor, q, "attention_backward");
  for (const Tensor* tensor : {&d_q, &d_k, &d_v}) check_dtype(*tensor, DType::f32, "attention gradient");
  if (q.device().is_cpu()) return cpu::attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, softmax_scale);
#ifdef HAI_WITH_CUDA
  return cuda::attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, softmax_scale, stream);
#else
  throw_no_backend("attention_backward", q.device());
#endif
}

}  // namespace hai
