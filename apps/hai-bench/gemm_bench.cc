#include "apps/hai-bench/gemm_bench.h"

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/gemm.h"

namespace hai::bench {
namespace {

nlohmann::json timed(const std::function<void()>& op, double flops, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"tflops", tflops(flops, ms)}};
}

}  // namespace

nlohmann::json benchmark_linear_gemms(const LinearShape& shape, int64_t tokens, const TimingOptions& timing) {
  OwnedTensor x = filled_device_tensor(Shape{tokens, shape.in}, DType::bf16);        // [T, in]
  OwnedTensor weight = filled_device_tensor(Shape{shape.out, shape.in}, DType::bf16);  // [out, in]
  OwnedTensor d_y = filled_device_tensor(Shape{tokens, shape.out}, DType::bf16);     // [T, out]
  OwnedTensor y(Shape{tokens, shape.out}, DType::f32, Device::cuda(0));              // [T, out]
  OwnedTensor d_x(Shape{tokens, shape.in}, DType::f32, Device::cuda(0));             // [T, in]
  OwnedTensor d_weight = filled_device_tensor(Shape{shape.out, shape.in}, DType::f32);  // [out, in]
  double flops = 2.0 * static_cast<double>(tokens) * static_cast<double>(shape.out) * static_cast<double>(shape.in);
  return {{"forward", timed([&] { gemm(y, x, weight, {.transpose_b = true}); }, flops, timing)},
          {"input_grad", timed([&] { gemm(d_x, d_y, weight); }, flops, timing)},
          {"weight_grad", timed([&] { gemm(d_weight, d_y, x, {.transpose_a = true, .beta = 1.0f}); }, flops, timing)}};
}

nlohmann::json benchmark_model_gemms(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  nlohmann::json linears = nlohmann::json::array();
  double step_ms = 0.0, step_flops = 0.0;
  for (const auto& [name, shape] : dense_linears(model)) {
    nlohmann::json result = benchmark_linear_gemms(shape, tokens, timing);
    result["name"] = name;
    result["out"] = shape.out;
    result["in"] = shape.in;
    result["count"] = shape.count;
    for (const char* pass : {"forward", "input_grad", "weight_grad"}) {
      step_ms += static_cast<double>(shape.count) * result[pass]["ms"].get<double>();
      step_flops += static_cast<double>(shape.count) * 2.0 * static_cast<double>(tokens) *
                    static_cast<double>(shape.out) * static_cast<double>(shape.in);
    }
    linears.push_back(std::move(result));
  }
  return {{"tokens", tokens},
          {"dtype", "bf16 inputs, fp32 accumulation and output"},
          {"linears", linears},
          {"step", {{"ms", step_ms}, {"tflops", tflops(step_flops, step_ms)}}}};
}

nlohmann::json benchmark_square_gemm(int64_t n, const TimingOptions& timing) {
  OwnedTensor a = filled_device_tensor(Shape{n, n}, DType::bf16);
  OwnedTensor b = filled_device_tensor(Shape{n, n}, DType::bf16);
  OwnedTensor c(Shape{n, n}, DType::f32, Device::cuda(0));
  double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  nlohmann::json result = timed([&] { gemm(c, a, b, {.transpose_b = true}); }, flops, timing);
  result["m"] = n;
  result["n"] = n;
  result["k"] = n;
  return result;
}

}  // namespace hai::bench
