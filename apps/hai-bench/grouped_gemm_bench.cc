#include "apps/hai-bench/grouped_gemm_bench.h"

#include <string>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/grouped_gemm.h"

namespace hai::bench {
namespace {

nlohmann::json timed(const std::function<void()>& op, double flops, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"tflops", tflops(flops, ms)}};
}

// y = x W_e^T, d_x = d_y W_e and grad W_e += d_y^T x over E experts of [out, in] and R rows.
nlohmann::json benchmark_projection(const std::string& name, int64_t experts, int64_t rows, int64_t in, int64_t out,
                                    const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  OwnedTensor offsets = even_expert_offsets(experts, rows);                      // [E + 1]
  OwnedTensor x = filled_device_tensor(Shape{rows, in}, DType::bf16);            // [R, in]
  OwnedTensor d_y = filled_device_tensor(Shape{rows, out}, DType::bf16);         // [R, out]
  OwnedTensor stacked = filled_device_tensor(Shape{experts * out, in}, DType::bf16);  // E x [out, in]
  OwnedTensor gradients = filled_device_tensor(Shape{experts * out, in}, DType::f32);  // E x [out, in]
  OwnedTensor y(Shape{rows, out}, DType::f32, gpu);    // [R, out]
  OwnedTensor d_x(Shape{rows, in}, DType::f32, gpu);   // [R, in]
  ExpertWeights weights{stacked.tensor().slice(0, out), out * in, experts};
  ExpertWeights weight_grads{gradients.tensor().slice(0, out), out * in, experts};
  double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
  return {{"name", name},
          {"in", in},
          {"out", out},
          {"forward", timed([&] { grouped_gemm(y, x, weights, offsets); }, flops, timing)},
          {"input_grad",
           timed([&] { grouped_gemm(d_x, d_y, weights, offsets, {.transpose_weights = false}); }, flops, timing)},
          {"input_grad_add",
           timed([&] { grouped_gemm(d_x, d_y, weights, offsets, {.transpose_weights = false, .beta = 1.0f}); }, flops,
                 timing)},
          {"weight_grad", timed([&] { grouped_gemm_weight_grad(weight_grads, d_y, x, offsets); }, flops, timing)}};
}

}  // namespace

nlohmann::json benchmark_grouped_gemm(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  int64_t experts = model.moe.routed_experts;
  int64_t rows = tokens * model.moe.experts_per_token;
  nlohmann::json projections = nlohmann::json::array();
  projections.push_back(
      benchmark_projection("gate_or_up", experts, rows, model.hidden_size, model.moe.expert_ffn_size, timing));
  projections.push_back(
      benchmark_projection("down", experts, rows, model.moe.expert_ffn_size, model.hidden_size, timing));
  return {{"experts", experts},
          {"rows", rows},
          {"dtype", "bf16 inputs, fp32 accumulation and output"},
          {"projections", projections}};
}

}  // namespace hai::bench
