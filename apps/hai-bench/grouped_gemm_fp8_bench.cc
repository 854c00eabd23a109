#include "apps/hai-bench/grouped_gemm_fp8_bench.h"

#include <string>
#include <vector>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/cast.h"
#include "framework/device/cuda/grouped_gemm_fp8.h"
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/elementwise.h"
#include "framework/device/fp8_quantize.h"

namespace hai::bench {
namespace {

using cuda::GroupedGemmFp8Kernel;
using cuda::GroupedGemmFp8WeightGradKernel;

constexpr TimingOptions kExactTiming{.warmup = 1, .iterations = 3};  // the SIMT kernel is slow
constexpr uint64_t kInputSeed = 11, kWeightSeed = 12, kOutputGradSeed = 13;

int64_t tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

nlohmann::json timed(const std::function<void()>& op, double flops, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"tflops", tflops(flops, ms)}};
}

// A bf16 copy on GPU 0 of an fp32 tensor.
OwnedTensor bf16_copy(const Tensor& x) {
  OwnedTensor result(x.shape(), DType::bf16, Device::cuda(0));
  cast_tensor(result, x);
  return result;
}

// E experts' weights [N, K] stacked ([E * N, K], N(0, std)), in fp32 and quantised in 128x128 blocks.
struct StackedExperts {
  OwnedTensor values;  // [E * N, K] e4m3
  OwnedTensor scales;  // [E * ceil(N / 128), ceil(K / 128)] fp32
  OwnedTensor bf16;    // [E * N, K]
  int64_t experts, n, k;

  Fp8ExpertWeights fp8() const {
    return {{values.tensor().slice(0, n), n * k, experts},
            {scales.tensor().slice(0, tiles(n)), tiles(n) * tiles(k), experts}};
  }
  ExpertWeights bf16_weights() const { return {bf16.tensor().slice(0, n), n * k, experts}; }
};

StackedExperts stacked_experts(int64_t experts, int64_t n, int64_t k, double init_std) {
  Device gpu = Device::cuda(0);
  OwnedTensor weights = normal_device_tensor(Shape{experts * n, k}, kWeightSeed);  // [E * N, K]
  scale_tensor(weights, static_cast<float>(init_std));
  StackedExperts result{OwnedTensor(Shape{experts * n, k}, DType::e4m3, gpu),
                        OwnedTensor(Shape{experts * tiles(n), tiles(k)}, DType::f32, gpu), bf16_copy(weights),
                        experts, n, k};
  Fp8ExpertWeights fp8 = result.fp8();
  for (int64_t e = 0; e < experts; ++e) {
    quantize_128x128(fp8.values.expert(e), fp8.scales.expert(e), weights.tensor().slice(e * n, e * n + n));
  }
  return result;
}

// y [R, N] = x [R, K] W_e^T per expert: the FP8 kernels (x in 1x128 tiles, W_e in 128x128 blocks) vs bf16.
nlohmann::json benchmark_forward(const StackedExperts& experts, const Tensor& offsets, int64_t rows,
                                 const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  int64_t n = experts.n, k = experts.k;
  OwnedTensor x = normal_device_tensor(Shape{rows, k}, kInputSeed);  // [R, K]
  OwnedTensor x_bf16 = bf16_copy(x);                                  // [R, K]
  OwnedTensor x_values(Shape{rows, k}, DType::e4m3, gpu), x_scales(Shape{rows, tiles(k)}, DType::f32, gpu);
  quantize_1x128(x_values, x_scales, x);
  Fp8Matrix x_fp8{x_values, x_scales, Fp8Scaling::tile_1x128};
  Fp8ExpertWeights weights = experts.fp8();
  OwnedTensor y(Shape{rows, n}, DType::f32, gpu);  // [R, N]
  auto run = [&](GroupedGemmFp8Kernel kernel) {
    return [&, kernel] { cuda::grouped_gemm_fp8(y, x_fp8, weights, offsets, 0.0f, {}, kernel); };
  };
  double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(k);
  bool tma = cuda::grouped_gemm_fp8_tma_fits(y, x_fp8, weights);
  bool wgmma = cuda::grouped_gemm_fp8_wgmma_fits(y, x_fp8, weights);
  nlohmann::json result = {{"kernel", tma ? "tma" : wgmma ? "wgmma" : "exact"},
                           {"fp8", timed(run(GroupedGemmFp8Kernel::automatic), flops, timing)}};
  if (tma && wgmma) result["wgmma"] = timed(run(GroupedGemmFp8Kernel::wgmma), flops, timing);
  result["exact"] = timed(run(GroupedGemmFp8Kernel::exact), flops, kExactTiming);
  ExpertWeights bf16_weights = experts.bf16_weights();
  result["bf16"] = timed([&] { grouped_gemm(y, x_bf16, bf16_weights, offsets); }, flops, timing);
  result["fp8_over_bf16"] = result["fp8"]["ms"].get<double>() / result["bf16"]["ms"].get<double>();
  return result;
}

// The token-padded, transposed FP8 copy of a sorted [R, C] matrix, with the buffers it owns.
struct TokenOperand {
  OwnedTensor values;  // [C, P] e4m3
  OwnedTensor scales;  // [P / 128, C] fp32

  Fp8ExpertTokens view() const { return {values, scales}; }
};

TokenOperand token_operand(const Tensor& x, const Tensor& offsets, const Tensor& padded, int64_t padded_rows) {
  int64_t cols = x.size(1);
  TokenOperand result{OwnedTensor(Shape{cols, padded_rows}, DType::e4m3, Device::cuda(0)),
                      OwnedTensor(Shape{padded_rows / kFp8TileSize, cols}, DType::f32, Device::cuda(0))};
  quantize_expert_tokens(result.view(), x, offsets, padded);
  return result;
}

// grad W_e [N, K] = d_y_e^T x_e per expert: the FP8 kernels (128-token tiles) vs bf16.
nlohmann::json benchmark_weight_grad(int64_t experts, int64_t n, int64_t k, const Tensor& offsets, int64_t rows,
                                     const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  int64_t padded_rows = padded_expert_rows(rows, experts);
  OwnedTensor padded(offsets.shape(), DType::i32, gpu);  // [E + 1]
  pad_expert_offsets(padded, offsets);
  OwnedTensor d_y = bf16_copy(normal_device_tensor(Shape{rows, n}, kOutputGradSeed));  // [R, N]
  OwnedTensor x = bf16_copy(normal_device_tensor(Shape{rows, k}, kInputSeed));         // [R, K]
  TokenOperand d_y_tokens = token_operand(d_y, offsets, padded, padded_rows);
  TokenOperand x_tokens = token_operand(x, offsets, padded, padded_rows);
  OwnedTensor store(Shape{experts * n, k}, DType::f32, gpu);  // E x [N, K]
  ExpertWeights gradients{store.tensor().slice(0, n), n * k, experts};
  auto run = [&](GroupedGemmFp8WeightGradKernel kernel) {
    return [&, kernel] {
      cuda::grouped_gemm_fp8_weight_grad(gradients, d_y_tokens.view(), x_tokens.view(), padded, 0.0f, {}, kernel);
    };
  };
  double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(k);
  bool tma = cuda::grouped_gemm_fp8_weight_grad_tma_fits(gradients, d_y_tokens.view(), x_tokens.view());
  nlohmann::json result = {{"kernel", tma ? "tma" : "exact"},
                           {"fp8", timed(run(GroupedGemmFp8WeightGradKernel::automatic), flops, timing)},
                           {"exact", timed(run(GroupedGemmFp8WeightGradKernel::exact), flops, kExactTiming)}};
  result["bf16"] = timed([&] { grouped_gemm_weight_grad(gradients, d_y, x, offsets, 0.0f); }, flops, timing);
  result["fp8_over_bf16"] = result["fp8"]["ms"].get<double>() / result["bf16"]["ms"].get<double>();
  return result;
}

}  // namespace

nlohmann::json benchmark_grouped_gemm_fp8(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  int64_t experts = model.moe.routed_experts;
  if (experts == 0) return {{"skipped", "the model has no routed experts"}};
  int64_t rows = tokens * model.moe.experts_per_token;
  std::vector<int32_t> rows_per_expert = uneven_expert_rows(experts, rows);
  OwnedTensor offsets = expert_offsets(rows_per_expert);  // [E + 1]
  struct Projection {
    const char* name;
    int64_t in, out;
  };
  nlohmann::json projections = nlohmann::json::array();
  for (Projection p : {Projection{"gate_or_up", model.hidden_size, model.moe.expert_ffn_size},
                       Projection{"down", model.moe.expert_ffn_size, model.hidden_size}}) {
    StackedExperts stacked = stacked_experts(experts, p.out, p.in, model.init_std);
    projections.push_back({{"name", p.name},
                           {"in", p.in},
                           {"out", p.out},
                           {"forward", benchmark_forward(stacked, offsets, rows, timing)},
                           {"weight_grad", benchmark_weight_grad(experts, p.out, p.in, offsets, rows, timing)}});
  }
  return {{"experts", experts},
          {"rows", rows},
          {"rows_per_expert", rows_per_expert},
          {"padded_rows", padded_expert_rows(rows, experts)},
          {"dtype", "e4m3 operands, fp32 block scales, fp32 accumulation and output; bf16: bf16 inputs, fp32 output"},
          {"projections", projections}};
}

}  // namespace hai::bench
