#include "apps/hai-bench/gemm_bench.h"

#include <map>
#include <string>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/gemm.h"
#include "model/parameters.h"

namespace hai::bench {
namespace {

struct LinearShape {
  int64_t out = 0;
  int64_t in = 0;
  int64_t count = 0;  // layers that have this linear
};

// "model.layers.3.self_attn.q_a_proj.weight" -> "self_attn.q_a_proj"; other names lose only ".weight".
std::string linear_name(const std::string& parameter) {
  std::string name = parameter;
  const std::string layers = "model.layers.";
  if (name.rfind(layers, 0) == 0) name = name.substr(name.find('.', layers.size()) + 1);
  const std::string weight = ".weight";
  if (name.size() > weight.size() && name.compare(name.size() - weight.size(), weight.size(), weight) == 0) {
    name.resize(name.size() - weight.size());
  }
  return name;
}

// The model's dense linear weights by name, with how many layers have each.
std::map<std::string, LinearShape> dense_linears(const ModelConfig& model) {
  std::map<std::string, LinearShape> linears;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    if (spec.shape.rank() != 2 || spec.group != ParameterGroup::dense || spec.name == "model.embed_tokens.weight") {
      continue;
    }
    LinearShape& shape = linears[linear_name(spec.name)];
    shape.out = spec.shape[0];
    shape.in = spec.shape[1];
    ++shape.count;
  }
  return linears;
}

nlohmann::json timed(const std::function<void()>& op, double flops, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"tflops", tflops(flops, ms)}};
}

// forward y = x W^T, input gradient dx = dy W, weight gradient dW += dy^T x, at T tokens.
nlohmann::json benchmark_linear(const LinearShape& shape, int64_t tokens, const TimingOptions& timing) {
  OwnedTensor x = filled_device_tensor(Shape{tokens, shape.in}, DType::bf16);        // [T, in]
  OwnedTensor weight = filled_device_tensor(Shape{shape.out, shape.in}, DType::bf16);  // [out, in]
  OwnedTensor d_y = filled_device_tensor(Shape{tokens, shape.out}, DType::bf16);     // [T, out]
  OwnedTensor y(Shape{tokens, shape.out}, DType::f32, Device::cuda(0));              // [T, out]
  OwnedTensor d_x(Shape{tokens, shape.in}, DType::f32, Device::cuda(0));             // [T, in]
  OwnedTensor d_weight = filled_device_tensor(Shape{shape.out, shape.in}, DType::f32);  // [out, in]
  double flops = 2.0 * static_cast<double>(tokens) * static_cast<double>(shape.out) * static_cast<double>(shape.in);
  return {{"out", shape.out},
          {"in", shape.in},
          {"count", shape.count},
          {"forward", timed([&] { gemm(y, x, weight, {.transpose_b = true}); }, flops, timing)},
          {"input_grad", timed([&] { gemm(d_x, d_y, weight); }, flops, timing)},
          {"weight_grad", timed([&] { gemm(d_weight, d_y, x, {.transpose_a = true, .beta = 1.0f}); }, flops, timing)}};
}

}  // namespace

nlohmann::json benchmark_model_gemms(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  nlohmann::json linears = nlohmann::json::array();
  double step_ms = 0.0, step_flops = 0.0;
  for (const auto& [name, shape] : dense_linears(model)) {
    nlohmann::json result = benchmark_linear(shape, tokens, timing);
    result["name"] = name;
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
