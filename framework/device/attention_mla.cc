#include "framework/device/attention_mla.h"

#include "framework/device/attention.h"
#include "framework/device/column_copy.h"
#include "framework/device/dispatch.h"
#include "framework/device/rope.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/ops.h"
#endif

namespace hai {
namespace {

// N, the unrotated columns of q and k.
int64_t nope_dim(const Tensor& q, const Tensor& k_rope) { return q.size(3) - k_rope.size(2); }

// out or d_out: fp32, or bf16 when q is.
void check_output_dtype(const Tensor& tensor, const Tensor& q, const char* what) {
  HAI_CHECK(tensor.dtype() == DType::f32 || (tensor.dtype() == DType::bf16 && q.dtype() == DType::bf16),
            "{} must be fp32, or bf16 with bf16 q; got {} with q {}", what, tensor.str(), q.str());
}

// Checks q [B, S, H, d_qk], kv [B, S, H, N + d_v], k_rope [B, S, R] (one dtype, one device), out [B, S, H, d_v] and
// lse [B, H, S]; attention_forward checks the rest.
void check_mla_operands(const Tensor& q, const Tensor& kv, const Tensor& k_rope, const Tensor& out,
                        const Tensor& lse) {
  HAI_CHECK(q.rank() == 4 && kv.rank() == 4 && k_rope.rank() == 3,
            "MLA attention: q, kv must be [B, S, H, d] and k_rope [B, S, R], got {}, {} and {}", q.str(), kv.str(),
            k_rope.str());
  int64_t batch = q.size(0), sequence = q.size(1), heads = q.size(2);
  int64_t nope = nope_dim(q, k_rope);
  HAI_CHECK(nope >= 0 && kv.size(3) > nope, "MLA attention: q {} with k_rope {} leaves {} columns for kv {}", q.str(),
            k_rope.str(), nope, kv.str());
  check_shape(kv, Shape{batch, sequence, heads, kv.size(3)}, "MLA attention kv");
  check_shape(k_rope, Shape{batch, sequence, k_rope.size(2)}, "MLA attention k_rope");
  check_shape(out, Shape{batch, sequence, heads, kv.size(3) - nope}, "MLA attention out");
  check_shape(lse, Shape{batch, heads, sequence}, "MLA attention lse");
  HAI_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::bf16, "MLA attention q must be fp32 or bf16, got {}",
            q.str());
  for (const Tensor* tensor : {&kv, &k_rope}) check_dtype(*tensor, q.dtype(), "MLA attention kv, k_rope");
  check_output_dtype(out, q, "MLA attention out");
  check_dtype(lse, DType::f32, "MLA attention lse");
  for (const Tensor* tensor : {&kv, &k_rope, &out, &lse}) check_same_device(*tensor, q, "MLA attention");
}

void check_gradients(const MlaAttentionGradients& gradients, const Tensor& q, const Tensor& kv, const Tensor& k_rope,
                     const Tensor& positions, const RopeTable& table) {
  int64_t batch = q.size(0), sequence = q.size(1), heads = q.size(2), rotated = k_rope.size(2);
  HAI_CHECK(2 * table.cos.size(1) == rotated, "MLA attention: a RoPE table of {} columns for {} rotated ones",
            2 * table.cos.size(1), rotated);
  check_shape(gradients.d_q, q.shape(), "MLA attention d_q");
  check_shape(gradients.d_kv, kv.shape(), "MLA attention d_kv");
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

// k [B, S, H, d_qk] and v [B, S, H, d_v] assembled from kv and k_rope.
struct KeyValues {
  OwnedTensor k, v;
};

KeyValues assembled(const Tensor& q, const Tensor& kv, const Tensor& k_rope, Stream stream) {
  int64_t nope = nope_dim(q, k_rope), value_dim = kv.size(3) - nope;
  KeyValues key_values{OwnedTensor(q.shape(), q.dtype(), q.device()),
                       OwnedTensor(Shape{q.size(0), q.size(1), q.size(2), value_dim}, q.dtype(), q.device())};
  copy_columns(key_values.k, kv, {.width = nope}, stream);
  copy_columns(key_values.k, k_rope, {.dst_offset = nope, .width = k_rope.size(2)}, stream);  // over the heads
  copy_columns(key_values.v, kv, {.src_offset = nope, .width = value_dim}, stream);
  return key_values;
}

// [B * S, H, W] view of [B, S, H, W]: dim 0 the token, as rope.h reads it.
Tensor per_token(const Tensor& per_sequence) {
  return per_sequence.reshape(
      Shape{per_sequence.size(0) * per_sequence.size(1), per_sequence.size(2), per_sequence.size(3)});
}

// attention_backward on assembled k, v into fp32 gradients, then laid out as MLA reads them.
void backward_then_lay_out(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                           const Tensor& kv, const Tensor& k_rope, const Tensor& out, const Tensor& lse,
                           float softmax_scale, const Tensor& positions, const RopeTable& table, Stream stream) {
  Device device = q.device();
  int64_t nope = nope_dim(q, k_rope), value_dim = kv.size(3) - nope;
  KeyValues key_values = assembled(q, kv, k_rope, stream);
  bool f32_d_q = gradients.d_q.dtype() == DType::f32;
  OwnedTensor d_q_scratch = f32_d_q ? OwnedTensor() : OwnedTensor(q.shape(), DType::f32, device);
  Tensor d_q = f32_d_q ? gradients.d_q : d_q_scratch.tensor();  // [B, S, H, d_qk] fp32
  OwnedTensor d_k(q.shape(), DType::f32, device);                                                    // [B, S, H, d_qk]
  OwnedTensor d_v(Shape{q.size(0), q.size(1), q.size(2), value_dim}, DType::f32, device);  // [B, S, H, d_v]
  attention_backward(d_q, d_k, d_v, d_out, q, key_values.k, key_values.v, out, lse, softmax_scale, stream);
  rope_backward(per_token(gradients.d_q), per_token(d_q), positions, table, nope, stream);
  copy_columns(gradients.d_kv, d_k, {.width = nope}, stream);
  copy_columns(gradients.d_kv, d_v, {.dst_offset = nope, .width = value_dim}, stream);
  copy_columns(gradients.d_k_rope, d_k, {.src_offset = nope, .width = k_rope.size(2)}, stream);
}

}  // namespace

void attention_forward_mla(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& kv,
                           const Tensor& k_rope, float softmax_scale, Stream stream) {
  check_mla_operands(q, kv, k_rope, out, lse);
#ifdef HAI_WITH_CUDA
  if (!q.device().is_cpu() && cuda::attention_forward_mla(out, lse, q, kv, k_rope, softmax_scale, stream)) return;
#endif
  KeyValues key_values = assembled(q, kv, k_rope, stream);
  attention_forward(out, lse, q, key_values.k, key_values.v, softmax_scale, stream);
}

void attention_backward_mla(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                            const Tensor& kv, const Tensor& k_rope, const Tensor& out, const Tensor& lse,
                            float softmax_scale, const Tensor& positions, const RopeTable& table, Stream stream) {
  check_mla_operands(q, kv, k_rope, out, lse);
  check_shape(d_out, out.shape(), "MLA attention d_out");
  check_output_dtype(d_out, q, "MLA attention d_out");
  check_same_device(d_out, q, "MLA attention");
  check_gradients(gradients, q, kv, k_rope, positions, table);
#ifdef HAI_WITH_CUDA
  if (!q.device().is_cpu() && cuda::attention_backward_mla(gradients.d_q, gradients.d_kv, gradients.d_k_rope, d_out,
                                                           q, kv, k_rope, out, lse, softmax_scale, positions, table,
                                                           stream)) {
    return;
  }
#endif
  backward_then_lay_out(gradients, d_out, q, kv, k_rope, out, lse, softmax_scale, positions, table, stream);
}

}  // namespace hai
