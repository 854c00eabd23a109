#include "apps/hai-bench/attention_bench.h"

#include <cmath>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/attention.h"

namespace hai::bench {

nlohmann::json benchmark_attention(const AttentionShape& shape, const TimingOptions& timing) {
  Shape qk{shape.batch, shape.sequence, shape.heads, shape.qk_head_dim};
  Shape value{shape.batch, shape.sequence, shape.heads, shape.v_head_dim};
  Device gpu = Device::cuda(0);
  OwnedTensor q = filled_device_tensor(qk, DType::bf16);      // [B, S, H, d_qk]
  OwnedTensor k = filled_device_tensor(qk, DType::bf16);      // [B, S, H, d_qk]
  OwnedTensor v = filled_device_tensor(value, DType::bf16);   // [B, S, H, d_v]
  OwnedTensor out(value, DType::f32, gpu);                    // [B, S, H, d_v]
  OwnedTensor lse(Shape{shape.batch, shape.heads, shape.sequence}, DType::f32, gpu);  // [B, H, S]
  OwnedTensor d_out = filled_device_tensor(value, DType::f32);  // [B, S, H, d_v]
  OwnedTensor d_q(qk, DType::f32, gpu), d_k(qk, DType::f32, gpu);  // [B, S, H, d_qk]
  OwnedTensor d_v(value, DType::f32, gpu);                          // [B, S, H, d_v]
  float scale = 1.0f / std::sqrt(static_cast<float>(shape.qk_head_dim));

  double causal_pairs = static_cast<double>(shape.sequence) * static_cast<double>(shape.sequence + 1) / 2.0;
  double forward_flops = 2.0 * static_cast<double>(shape.batch * shape.heads) * causal_pairs *
                         static_cast<double>(shape.qk_head_dim + shape.v_head_dim);
  double forward_ms = time_ms([&] { attention_forward(out, lse, q, k, v, scale); }, timing);
  double backward_ms =
      time_ms([&] { attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, scale); }, timing);
  return {{"batch", shape.batch},
          {"sequence", shape.sequence},
          {"heads", shape.heads},
          {"qk_head_dim", shape.qk_head_dim},
          {"v_head_dim", shape.v_head_dim},
          {"dtype", "bf16 q, k, v; fp32 out, lse and gradients"},
          {"forward", {{"ms", forward_ms}, {"tflops", tflops(forward_flops, forward_ms)}}},
          {"backward", {{"ms", backward_ms}, {"tflops", tflops(2.0 * forward_flops, backward_ms)}}}};
}

}  // namespace hai::bench
