
#include "framework/device/cpu/ops.h"
#include "framework/device/fp8_quantize.h"

namespace hai::cpu {

// NOTE: the dequantised copies are allocated per call, as fp8_gemm's reference does (this is the CPU reference).
void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta) {
  check_offsets_values(expert_offsets, x.values.size(0));
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  int64_t routed_rows = offsets[weights.values.experts];
  int64_t n = y.size(1), k = x.values.size(1);
  OwnedTensor x_values(Shape{routed_rows, k}, DType::f32);  // [offsets[E], K] dequantised
  cpu::dequantize_tiles(x_values, x.values.slice(0, routed_rows), x.scales.slice(0, routed_rows), {1, kFp8TileSize});
  OwnedTensor weight_values(Shape{n, k}, DType::f32);  // [N, K] one expert's, dequantised
  GemmOptions options{.transpose_b = true, .beta = beta};
  for (int64_t e = 0; e < weights.values.experts; ++e) {
    if (offsets[e] == offsets[e + 1]) continue;
    cpu::dequantize_tiles(weight_values, weights.values.expert(e), weights.scales.expert(e),
                     {kFp8TileSize, kFp8TileSize});
    // [rows of e, N] <- [rows of e, K] @ [N, K]^T; a bf16 y gets each fp32 sum rounded once
    cpu::gemm(y.slice(offsets[e], offsets[e + 1]), x_values.tensor().slice(offsets[e], offsets[e + 1]),
              weight_values, options);
  }
}

}  // namespace hai::cpu
