
#include "framework/device/cpu/ops.h"

namespace hai::cpu {

void check_offsets_values(const Tensor& expert_offsets, int64_t rows) {
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  int64_t experts = expert_offsets.numel() - 1;
  HAI_CHECK(offsets[0] == 0, "grouped gemm expert_offsets[0] is {}, must be 0", offsets[0]);
  for (int64_t e = 0; e < experts; ++e) {
    HAI_CHECK(offsets[e] <= offsets[e + 1], "grouped gemm expert_offsets decrease at expert {}: {} > {}", e,
              offsets[e], offsets[e + 1]);
  }
  HAI_CHECK(offsets[experts] <= rows, "grouped gemm expert_offsets[{}] = {} exceeds the {} rows", experts,
            offsets[experts], rows);
}

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options) {
  check_offsets_values(expert_offsets, x.size(0));
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  if (y.dtype() == DType::bf16) {
    // The fp32 sums, then rounded once (beta is 0).
    Tensor routed = y.slice(0, offsets[weights.experts]);
    OwnedTensor sums(routed.shape(), DType::f32, y.device());  // [offsets[E], N]
    cpu::grouped_gemm(sums, x.slice(0, offsets[weights.experts]), weights, expert_offsets, options);
    cast_tensor(routed, sums);
    return;
  }
  GemmOptions gemm_options{.transpose_b = options.transpose_weights, .beta = options.beta};
  for (int64_t e = 0; e < weights.experts; ++e) {
    if (offsets[e] == offsets[e + 1]) continue;
    // [rows of e, N] <- [rows of e, K] @ op(W_e)
    cpu::gemm(y.slice(offsets[e], offsets[e + 1]), x.slice(offsets[e], offsets[e + 1]), weights.expert(e),
              gemm_options);
  }
}

void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta) {
  check_offsets_values(expert_offsets, x.size(0));
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  for (int64_t e = 0; e < gradients.experts; ++e) {
    Tensor gradient = gradients.expert(e);  // [N, K]
    if (offsets[e] == offsets[e + 1]) {
      if (beta == 0.0f) zero_fill(gradient);
      continue;
    }
    // [N, K] = [rows of e, N]^T @ [rows of e, K] + beta * [N, K]
    cpu::gemm(gradient, d_y.slice(offsets[e], offsets[e + 1]), x.slice(offsets[e], offsets[e + 1]),
              GemmOptions{.transpose_a = true, .beta = beta});
  }
}

}  // namespace hai::cpu
