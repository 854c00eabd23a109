#include "framework/device/attention_mla.h"

#include "framework/device/attention.h"
#include "framework/device/column_copy.h"
#include "framework/device/dispatch.h"
#include "framework/device/rope.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/attention.h"
#endif

namespace hai {
namespace {

void check_gradients(const MlaAttentionGradients& gradients, const Tensor& q, const Tensor& v, const Tensor& positions,
                     const RopeTable& table) {
  HAI_CHECK(q.rank() == 4 && v.rank() == 4, "MLA attention q and v must be [B, S, H, d], got {} and {}", q.str(),
            v.str());
  int64_t batch = q.size(0), sequence = q.size(1), heads = q.size(2);
  int64_t rotated = 2 * table.cos.size(1), nope = q.size(3) - rotated;
  HAI_CHECK(nope >= 0, "MLA attention: {} rotated columns of a {}-wide q", rotated, q.size(3));
  check_shape(gradients.d_q, q.shape(), "MLA attention d_q");
  check_shape(gradients.d_kv, Shape{batch, sequence, heads, nope + v.size(3)}, "MLA attention d_kv");
  check_shape(gradients.d_k_rope, Shape{batch, sequence, heads, rotated}, "MLA attention d_k_rope");
  check_shape(positions, Shape{batch * sequence}, "MLA attention positions");
  for (const Tensor* gradient : {&gradients.d_q, &gradients.d_kv}) {
    HAI_CHECK(gradient->dtype() == DType::f32 || gradient->dtype() == DType::bf16,
              "MLA attention gradients must be fp32 or bf16, got {}", gradient->str());
  }
  check_dtype(gradients.d_k_rope, DType::f32, "MLA attention d_k_rope");
  check_dtype(positions, DType::i32, "MLA attention positions");
  for (const Tensor* tensor : {&gradients.d_q, &gradients.d_kv, &gradients.d_k_rope, &positions, &table.cos}) {
    check_same_device(*tensor, q, "attention_backward_mla");
  }
}

// [B * S, H, W] view of [B, S, H, W]: dim 0 the token, as rope.h reads it.
Tensor per_token(const Tensor& per_sequence) {
  return per_sequence.reshape(
      Shape{per_sequence.size(0) * per_sequence.size(1), per_sequence.size(2), per_sequence.size(3)});
}

// attention_backward into fp32 gradients, then laid out as MLA reads them.
void backward_then_lay_out(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                           const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, float softmax_scale,
                           const Tensor& positions, const RopeTable& table, Stream stream) {
  Device device = q.device();
  int64_t nope = q.size(3) - 2 * table.cos.size(1);
  bool f32_d_q = gradients.d_q.dtype() == DType::f32;
  OwnedTensor d_q_scratch = f32_d_q ? OwnedTensor() : OwnedTensor(q.shape(), DType::f32, device);
  Tensor d_q = f32_d_q ? gradients.d_q : d_q_scratch.tensor();  // [B, S, H, d_qk] fp32
  OwnedTensor d_k(q.shape(), DType::f32, device);  // [B, S, H, d_qk]
  OwnedTensor d_v(v.shape(), DType::f32, device);  // [B, S, H, d_v]
  attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, softmax_scale, stream);
  rope_backward(per_token(gradients.d_q), per_token(d_q), positions, table, nope, stream);
  copy_columns(gradients.d_kv, d_k, {.width = nope}, stream);
  copy_columns(gradients.d_kv, d_v, {.dst_offset = nope, .width = v.size(3)}, stream);
  copy_columns(gradients.d_k_rope, d_k, {.src_offset = nope, .width = q.size(3) - nope}, stream);
}

}  // namespace

void attention_backward_mla(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                            const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, float softmax_scale,
                            const Tensor& positions, const RopeTable& table, Stream stream) {
  check_attention_backward_inputs(d_out, q, k, v, out, lse);
  check_gradients(gradients, q, v, positions, table);
#ifdef HAI_WITH_CUDA
  if (!q.device().is_cpu() && cuda::attention_backward_mla(gradients.d_q, gradients.d_kv, gradients.d_k_rope, d_out,
                                                           q, k, v, out, lse, softmax_scale, positions, table,
                                                           stream)) {
    return;
  }
#endif
  backward_then_lay_out(gradients, d_out, q, k, v, out, lse, softmax_scale, positions, table, stream);
}

}  // namespace hai
