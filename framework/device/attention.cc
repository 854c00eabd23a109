#include "framework/device/attention.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include <cstdint>
#include <optional>

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/scratch.h"
#include "framework/device/rope_table.h"

// The CUDA backend's host side: the checked tensors to the launchers of the cuda/attention_*.cu kernels.
namespace hai::cuda {
namespace {

constexpr int64_t kMaxHeadDim = 256;

// The kernels copy rows in 16-byte pieces: head widths are multiples of 8 and every tensor starts 16-byte aligned.
kernels::AttentionGeometry geometry_of(const Tensor& q, int64_t v_dim, float softmax_scale,
                                       std::initializer_list<const Tensor*> tensors) {
  int64_t qk_dim = q.size(3);
  HAI_CHECK(qk_dim % 8 == 0 && v_dim % 8 == 0 && qk_dim <= kMaxHeadDim && v_dim <= kMaxHeadDim && qk_dim > 0 &&
                v_dim > 0,
            "CUDA attention needs head widths that are multiples of 8 up to {}, got d_qk {} and d_v {}", kMaxHeadDim,
            qk_dim, v_dim);
  for (const Tensor* tensor : tensors) {
    HAI_CHECK(reinterpret_cast<uintptr_t>(tensor->raw()) % 16 == 0, "CUDA attention needs 16-byte aligned operands, "
              "got {}", tensor->str());
  }
  return {q.size(0), q.size(1), q.size(2), static_cast<int>(qk_dim), static_cast<int>(v_dim), softmax_scale};
}

const uint16_t* bf16_bits(const Tensor& tensor) { return static_cast<const uint16_t*>(tensor.raw()); }

// attention_output_dots: D of row r of [B, S, H] into dots[r * dots_stride], and for the bf16 kernels (q bf16)
// d_out in bf16: as given, or rounded once into `rounded`. Returns the bf16 d_out those kernels read (null for
// fp32 q).
const uint16_t* output_dots(float* dots, int64_t dots_stride, std::optional<Scratch>& rounded, const Tensor& d_out,
                            const Tensor& out, const Tensor& q, const kernels::AttentionGeometry& geometry,
                            cudaStream_t stream) {
  bool bf16_kernels = q.dtype() == DType::bf16, bf16_d_out = d_out.dtype() == DType::bf16;
  if (bf16_kernels && !bf16_d_out) rounded.emplace(d_out.numel() * 2, stream);  // [B, S, H, d_v] bf16
  auto* rounded_bits = rounded ? static_cast<uint16_t*>(rounded->data()) : nullptr;
  check_launch(kernels::attention_output_dots(dots, dots_stride, rounded_bits, d_out.raw(), bf16_d_out, out.raw(),
                                              out.dtype() == DType::bf16, geometry, stream),
               "attention_backward");
  if (!bf16_kernels) return nullptr;
  return rounded_bits ? rounded_bits : bf16_bits(d_out);
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale, Stream stream) {
  kernels::AttentionGeometry geometry = geometry_of(q, v.size(3), softmax_scale, {&out, &q, &k, &v});
  if (q.numel() == 0) return;
  cudaStream_t cuda_stream = prepare_launch(q.device(), stream);
  if (q.dtype() == DType::bf16) {
    check_launch(kernels::attention_forward_bf16(out.raw(), out.dtype() == DType::bf16, lse.data<float>(),
                                                 bf16_bits(q), bf16_bits(k), bf16_bits(v), geometry, cuda_stream),
                 "attention_forward");
    return;
  }
  check_launch(kernels::attention_forward_f32(out.data<float>(), lse.data<float>(), q.data<float>(), k.data<float>(),
                                              v.data<float>(), geometry, cuda_stream),
               "attention_forward");
}

void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale, Stream stream) {
  kernels::AttentionGeometry geometry =
      geometry_of(q, v.size(3), softmax_scale, {&d_q, &d_k, &d_v, &d_out, &q, &k, &v, &out});
  if (q.numel() == 0) return;
  cudaStream_t cuda_stream = prepare_launch(q.device(), stream);
  std::optional<Scratch> rounded_d_out;
  const uint16_t* d_out_bits =
      output_dots(d_q.data<float>(), geometry.qk_dim, rounded_d_out, d_out, out, q, geometry, cuda_stream);
  if (q.dtype() == DType::bf16) {
    check_launch(kernels::attention_backward_bf16(d_q.data<float>(), d_k.data<float>(), d_v.data<float>(), d_out_bits,
                                                  bf16_bits(q), bf16_bits(k), bf16_bits(v), lse.data<float>(),
                                                  geometry, cuda_stream),
                 "attention_backward");
    return;
  }
  check_launch(kernels::attention_backward_f32(d_q.data<float>(), d_k.data<float>(), d_v.data<float>(),
                                               d_out.data<float>(), q.data<float>(), k.data<float>(),
                                               v.data<float>(), lse.data<float>(), geometry, cuda_stream),
               "attention_backward");
}

namespace {

// The geometry and kernel operands of MLA's q, kv, k_rope where the wgmma kernels read them (bf16, N a multiple of
// 64, the kernels apply), with `tensors` 16-byte aligned; nullopt elsewhere.
struct MlaKernelOperands {
  kernels::AttentionGeometry geometry;
  kernels::KeyValueSource key_values;
};

std::optional<MlaKernelOperands> mla_kernel_operands(const Tensor& q, const Tensor& kv, const Tensor& k_rope,
                                                     float softmax_scale,
                                                     std::initializer_list<const Tensor*> tensors) {
  int64_t nope_dim = q.size(3) - k_rope.size(2);
  if (q.dtype() != DType::bf16 || nope_dim % 64 != 0) return std::nullopt;
  MlaKernelOperands operands{geometry_of(q, kv.size(3) - nope_dim, softmax_scale, tensors),
                             {bf16_bits(kv), bf16_bits(kv), bf16_bits(k_rope), static_cast<int>(nope_dim)}};
  bool applies = false;
  check_launch(kernels::attention_wgmma_applies(operands.geometry, &applies), "MLA attention");
  if (!applies) return std::nullopt;
  return operands;
}

}  // namespace

bool attention_forward_mla(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& kv,
                           const Tensor& k_rope, float softmax_scale, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(q.device(), stream);
  std::optional<MlaKernelOperands> operands =
      mla_kernel_operands(q, kv, k_rope, softmax_scale, {&out, &q, &kv, &k_rope});
  if (!operands) return false;
  if (q.numel() == 0) return true;
  check_launch(kernels::attention_forward_bf16_wgmma(out.raw(), out.dtype() == DType::bf16, lse.data<float>(),
                                                     bf16_bits(q), operands->key_values, operands->geometry,
                                                     cuda_stream),
               "attention_forward_mla");
  return true;
}

bool attention_backward_mla(const Tensor& d_q, const Tensor& d_kv, const Tensor& d_k_rope, const Tensor& d_out,
                            const Tensor& q, const Tensor& kv, const Tensor& k_rope, const Tensor& out,
                            const Tensor& lse, float softmax_scale, const Tensor& positions, const RopeTable& table,
                            Stream stream) {
  if (d_q.dtype() != DType::bf16 || d_kv.dtype() != DType::bf16) return false;
  cudaStream_t cuda_stream = prepare_launch(q.device(), stream);
  std::optional<MlaKernelOperands> operands =
      mla_kernel_operands(q, kv, k_rope, softmax_scale, {&d_q, &d_kv, &d_k_rope, &d_out, &q, &kv, &k_rope, &out});
  if (!operands) return false;
  if (q.numel() == 0) return true;
  const kernels::AttentionGeometry& geometry = operands->geometry;
  Scratch dots(geometry.batch * geometry.sequence * geometry.heads * 4, cuda_stream);  // [B, S, H] fp32: D
  auto* dot_values = static_cast<float*>(dots.data());
  std::optional<Scratch> rounded_d_out;
  const uint16_t* d_out_bits = output_dots(dot_values, 1, rounded_d_out, d_out, out, q, geometry, cuda_stream);
  kernels::MlaGradients gradients{.d_q = static_cast<uint16_t*>(d_q.raw()),
                                  .d_kv = static_cast<uint16_t*>(d_kv.raw()),
                                  .d_k_rope = d_k_rope.data<float>(),
                                  .positions = positions.data<int32_t>(),
                                  .cos = table.cos.data<float>(),
                                  .sin = table.sin.data<float>(),
                                  .table_positions = table.cos.size(0),
                                  .nope_dim = operands->key_values.nope_dim};
  check_launch(kernels::attention_backward_mla_wgmma(gradients, dot_values, d_out_bits, bf16_bits(q),
                                                     operands->key_values, lse.data<float>(), geometry, cuda_stream),
               "attention_backward_mla");
  return true;
}

}  // namespace hai::cuda
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
