#include "apps/hai-bench/fp8_bench.h"

#include <array>

#include "apps/hai-bench/device_tensors.h"
#include "apps/hai-bench/gemm_bench.h"
#include "apps/hai-bench/model_linears.h"
#include "framework/device/cuda/fp8_gemm.h"
#include "framework/device/fp8_gemm.h"
#include "framework/device/fp8_quantize.h"
#include "model/linear.h"

namespace hai::bench {
namespace {

constexpr uint64_t kInputSeed = 1, kOutputGradSeed = 2, kWeightSeed = 3;
constexpr std::array<const char*, 3> kPasses = {"forward", "input_grad", "weight_grad"};
using PassTimes = std::array<double, 3>;  // ms, in kPasses' order

int64_t tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

double linear_flops(const LinearShape& shape, int64_t tokens) {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(shape.out) * static_cast<double>(shape.in);
}

// A matrix quantised in 1x128 tiles, with the buffers it owns.
struct Fp8Operand {
  OwnedTensor values;
  OwnedTensor scales;

  Fp8Matrix matrix() const { return {values, scales, Fp8Scaling::tile_1x128}; }
};

// The buffers of a [rows, cols] matrix in 1x128 tiles along cols.
Fp8Operand fp8_operand(int64_t rows, int64_t cols) {
  return {OwnedTensor(Shape{rows, cols}, DType::e4m3, Device::cuda(0)),          // [rows, cols]
          OwnedTensor(Shape{rows, tiles(cols)}, DType::f32, Device::cuda(0))};  // [rows, ceil(cols / 128)]
}

// The activations of one linear as its FP8 GEMMs read them.
struct ActivationOperands {
  Fp8Operand x_rows;       // x [T, in]: forward's A
  Fp8Operand d_y_rows;     // d_y [T, out]: input_grad's A
  Fp8Operand x_columns;    // x^T [in, T], tiles along the tokens: weight_grad's B
  Fp8Operand d_y_columns;  // d_y^T [out, T], tiles along the tokens: weight_grad's A
};

// {ms, gbps} of a quantisation of `x` (fp32) into `q` and `scales`.
nlohmann::json timed_quantize(const std::function<void()>& quantize, const Tensor& x, const Tensor& q,
                              const Tensor& scales, const TimingOptions& timing) {
  double ms = time_ms(quantize, timing);
  double bytes = static_cast<double>(x.bytes() + q.bytes() + scales.bytes());
  return {{"ms", ms}, {"gbps", bytes / (ms * 1e-3) / 1e9}};
}

// {fp8_ms, fp8_tflops, bf16_ms, bf16_tflops, fp8_over_bf16} of work of `flops`.
nlohmann::json fp8_versus_bf16(double fp8_ms, double bf16_ms, double flops) {
  return {{"fp8_ms", fp8_ms},
          {"fp8_tflops", tflops(flops, fp8_ms)},
          {"bf16_ms", bf16_ms},
          {"bf16_tflops", tflops(flops, bf16_ms)},
          {"fp8_over_bf16", fp8_ms / bf16_ms}};
}

// A store of one weight [out, in] named "weight" with a bf16 compute copy, and its FP8 copies when fp8.enabled.
ParameterStore weight_store(const LinearShape& shape, const Fp8WeightOptions& fp8, double init_std) {
  ParameterSpec spec{"weight", Shape{shape.out, shape.in}, ParameterGroup::dense, ParameterInit::normal, true, true};
  spec.fp8_gemm = true;
  ParameterStore store({spec}, Device::cuda(0), DType::bf16, fp8);
  store.initialize(kWeightSeed, init_std);
  store.refresh_compute_copy();
  store.zero_grads();
  return store;
}

// The four activation quantisations of one micro-batch, timed; they leave their results in `operands`.
nlohmann::json benchmark_activation_quantize(ActivationOperands& operands, const Tensor& x, const Tensor& d_y,
                                             bool pow2_scales, const TimingOptions& timing) {
  auto rows = [&](const Fp8Operand& q, const Tensor& source) {
    return timed_quantize([&] { quantize_1x128(q.values, q.scales, source, pow2_scales); }, source, q.values,
                          q.scales, timing);
  };
  auto columns = [&](const Fp8Operand& q, const Tensor& source) {
    return timed_quantize([&] { quantize_128x1_transposed(q.values, q.scales, source, pow2_scales); }, source,
                          q.values, q.scales, timing);
  };
  return {{"x_1x128", rows(operands.x_rows, x)},
          {"d_y_1x128", rows(operands.d_y_rows, d_y)},
          {"x_128x1_transposed", columns(operands.x_columns, x)},
          {"d_y_128x1_transposed", columns(operands.d_y_columns, d_y)}};
}

// The three FP8 GEMMs of a linear on pre-quantised operands vs gemm_bench's BF16 ones.
nlohmann::json benchmark_gemms(const LinearShape& shape, int64_t tokens, const ActivationOperands& operands,
                               const Parameter& weight, const TimingOptions& timing) {
  OwnedTensor y(Shape{tokens, shape.out}, DType::f32, Device::cuda(0));   // [T, out]
  OwnedTensor d_x(Shape{tokens, shape.in}, DType::f32, Device::cuda(0));  // [T, in]
  Fp8Matrix weight_blocks{weight.fp8.values, weight.fp8.scales, Fp8Scaling::block_128x128};  // W [out, in]
  Fp8Matrix transposed_weight_blocks{weight.fp8.transposed_values, weight.fp8.transposed_scales,
                                     Fp8Scaling::block_128x128};  // W^T [in, out]
  PassTimes fp8_ms = {
      time_ms([&] { fp8_gemm(y, operands.x_rows.matrix(), weight_blocks); }, timing),
      time_ms([&] { fp8_gemm(d_x, operands.d_y_rows.matrix(), transposed_weight_blocks); }, timing),
      time_ms([&] { fp8_gemm(weight.grad, operands.d_y_columns.matrix(), operands.x_columns.matrix(), 1.0f); },
              timing)};
  // Whether cuBLASLt takes each pass's C [M, N] and inner dimension K (else fp8_gemm falls back).
  std::array<bool, 3> on_cublaslt = {cuda::fp8_gemm_supported(tokens, shape.out, shape.in),
                                     cuda::fp8_gemm_supported(tokens, shape.in, shape.out),
                                     cuda::fp8_gemm_supported(shape.out, shape.in, tokens)};
  nlohmann::json bf16 = benchmark_linear_gemms(shape, tokens, timing);
  nlohmann::json result;
  for (size_t pass = 0; pass < kPasses.size(); ++pass) {
    result[kPasses[pass]] =
        fp8_versus_bf16(fp8_ms[pass], bf16[kPasses[pass]]["ms"].get<double>(), linear_flops(shape, tokens));
    result[kPasses[pass]]["path"] = on_cublaslt[pass] ? "cublaslt" : "dequantized fp32 gemm";
  }
  return result;
}

// Forward, backward_input and backward_weight of a Linear on `weight`, called as the model calls them: x in the
// layer's input_dtype and d_y in its output_grad_dtype (bf16 in BF16 and FP8).
PassTimes time_layer(const Parameter& weight, const Tensor& x, const Tensor& d_y, const TimingOptions& timing) {
  Linear layer(weight);
  int64_t tokens = x.size(0);
  OwnedTensor y(Shape{tokens, layer.out_features()}, DType::f32, Device::cuda(0));   // [T, out]
  OwnedTensor d_x(Shape{tokens, layer.in_features()}, DType::f32, Device::cuda(0));  // [T, in]
  OwnedTensor layer_x = to_compute_dtype(x, layer.input_dtype());                     // [T, in]
  OwnedTensor layer_d_y = to_compute_dtype(d_y, layer.output_grad_dtype());           // [T, out]
  OwnedTensor saved_input;
  // NOTE: braced initialisers run in order: forward fills saved_input before backward_weight reads it.
  return {time_ms([&] { layer.forward(y, layer_x, saved_input); }, timing),
          time_ms([&] { layer.backward_input(d_x, layer_d_y); }, timing),
          time_ms([&] { layer.backward_weight(layer_d_y, saved_input); }, timing)};
}

// The weight's quantisations of an optimizer step (ParameterStore::refresh_fp8_copies), timed.
nlohmann::json benchmark_weight_quantize(const Parameter& weight, const TimingOptions& timing) {
  const Fp8Weight& fp8 = weight.fp8;
  return {{"128x128", timed_quantize([&] { quantize_128x128(fp8.values, fp8.scales, weight.value); },
                                     weight.value, fp8.values, fp8.scales, timing)},
          {"128x128_transposed",
           timed_quantize(
               [&] { quantize_128x128_transposed(fp8.transposed_values, fp8.transposed_scales, weight.value); },
               weight.value, fp8.transposed_values, fp8.transposed_scales, timing)}};
}

nlohmann::json benchmark_linear(const LinearShape& shape, int64_t tokens, bool pow2_scales, double init_std,
                                const TimingOptions& timing) {
  OwnedTensor x = normal_device_tensor(Shape{tokens, shape.in}, kInputSeed);          // [T, in]
  OwnedTensor d_y = normal_device_tensor(Shape{tokens, shape.out}, kOutputGradSeed);  // [T, out]
  ParameterStore fp8_store = weight_store(shape, {.enabled = true, .pow2_activation_scales = pow2_scales}, init_std);
  ParameterStore bf16_store = weight_store(shape, {}, init_std);
  ActivationOperands operands{fp8_operand(tokens, shape.in), fp8_operand(tokens, shape.out),
                              fp8_operand(shape.in, tokens), fp8_operand(shape.out, tokens)};
  nlohmann::json quantize = benchmark_activation_quantize(operands, x, d_y, pow2_scales, timing);
  nlohmann::json gemms = benchmark_gemms(shape, tokens, operands, fp8_store["weight"], timing);
  PassTimes fp8_layer_ms = time_layer(fp8_store["weight"], x, d_y, timing);
  PassTimes bf16_layer_ms = time_layer(bf16_store["weight"], x, d_y, timing);
  nlohmann::json layer;
  for (size_t pass = 0; pass < kPasses.size(); ++pass) {
    layer[kPasses[pass]] = fp8_versus_bf16(fp8_layer_ms[pass], bf16_layer_ms[pass], linear_flops(shape, tokens));
  }
  return {{"out", shape.out},
          {"in", shape.in},
          {"count", shape.count},
          {"gemm", gemms},
          {"quantize", quantize},
          {"layer", layer},
          {"weight_quantize", benchmark_weight_quantize(fp8_store["weight"], timing)}};
}

// The linears' times summed, count x each, over one micro-batch (passes, activation quantisations) and one
// optimizer step (weight quantisations).
nlohmann::json step_summary(const nlohmann::json& linears, int64_t tokens) {
  double fp8_gemm_ms = 0, bf16_gemm_ms = 0, fp8_layer_ms = 0, bf16_layer_ms = 0, flops = 0;
  double activation_quantize_ms = 0, weight_quantize_ms = 0;
  for (const nlohmann::json& linear : linears) {
    double count = linear["count"].get<double>();
    for (const char* pass : kPasses) {
      fp8_gemm_ms += count * linear["gemm"][pass]["fp8_ms"].get<double>();
      bf16_gemm_ms += count * linear["gemm"][pass]["bf16_ms"].get<double>();
      fp8_layer_ms += count * linear["layer"][pass]["fp8_ms"].get<double>();
      bf16_layer_ms += count * linear["layer"][pass]["bf16_ms"].get<double>();
      flops += count * linear_flops({.out = linear["out"].get<int64_t>(), .in = linear["in"].get<int64_t>()}, tokens);
    }
    for (const nlohmann::json& quantize : linear["quantize"]) {
      activation_quantize_ms += count * quantize["ms"].get<double>();
    }
    for (const nlohmann::json& quantize : linear["weight_quantize"]) {
      weight_quantize_ms += count * quantize["ms"].get<double>();
    }
  }
  return {{"gemm", fp8_versus_bf16(fp8_gemm_ms, bf16_gemm_ms, flops)},
          {"layer", fp8_versus_bf16(fp8_layer_ms, bf16_layer_ms, flops)},
          {"activation_quantize_ms", activation_quantize_ms},
          {"fp8_layer_other_ms", fp8_layer_ms - fp8_gemm_ms - activation_quantize_ms},
          {"weight_quantize_ms", weight_quantize_ms}};
}

}  // namespace

nlohmann::json benchmark_fp8_linears(const ModelConfig& model, int64_t tokens, bool pow2_scales,
                                     const TimingOptions& timing) {
  nlohmann::json linears = nlohmann::json::array();
  for (const auto& [name, shape] : dense_linears(model)) {
    if (!shape.fp8_gemm) continue;
    nlohmann::json result = benchmark_linear(shape, tokens, pow2_scales, model.init_std, timing);
    result["name"] = name;
    linears.push_back(std::move(result));
  }
  return {{"tokens", tokens},
          {"dtype", "e4m3 operands, fp32 block scales (1x128 activations, 128x128 weights), fp32 accumulation and "
                    "output; bf16 as in gemm"},
          {"pow2_scales", pow2_scales},
          {"linears", linears},
          {"step", step_summary(linears, tokens)}};
}

}  // namespace hai::bench
