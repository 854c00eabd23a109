// RoutedExperts in precision.mode fp8: the forward and the input gradient are FP8 grouped GEMMs on the store's FP8
// weight copies, bit for bit the per-expert dense FP8 products (framework/device/fp8_gemm.h's CPU op) of the recipe's
// operands: x as given (e4m3, 1x128), SwiGLU's fp32 activation quantised 1x128, d_out rounded to bf16 and quantised
// 1x128, the bf16 gradients of gate and up quantised 1x128, and the transposed weight copies for the input gradient;
// the output gradients are kept for the weight gradient as their token-padded FP8 copies only.
// Experts are uneven and one is empty; H and F are not multiples of 128 (partial tiles and blocks). The results also
// stay near the fp32 experts on the same master weights (the FP8 copies are the weights, not a transposition of
// them), and the weight gradient is the FP8 grouped GEMM of the tensors kept, quantised along the tokens.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/device/cast.h"
#include "framework/device/fp8_gemm.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/fp8_rows.h"
#include "framework/device/gemm.h"
#include "framework/device/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/swiglu.h"
#include "model/routed_experts.h"
#include "tests/framework/device/test_util.h"
#include "tests/model/routed_expert_specs.h"

namespace hai {
namespace {

using testing::random_tensor;

constexpr int64_t kHidden = 200, kFfn = 136;
const std::vector<int32_t> kRowsPerExpert = {37, 0, 130, 5};
constexpr int64_t kExperts = 4, kRows = 172;

std::vector<ParameterSpec> expert_specs() {
  std::vector<ParameterSpec> specs;
  // NOTE: a dense parameter first, so that the compute copy and the FP8 copies do not start with the experts.
  specs.push_back({"norm.weight", Shape{kHidden}, ParameterGroup::dense, ParameterInit::ones, false, true});
  testing::append_fp8_routed_expert_specs(specs, kExperts, kHidden, kFfn);
  return specs;
}

ParameterStore make_store(bool fp8) {
  ParameterStore store(expert_specs(), Device::cpu(), fp8 ? DType::bf16 : DType::f32, {.enabled = fp8});
  store.initialize(5, 0.05);
  store.refresh_compute_copy();
  store.zero_grads();
  return store;
}

OwnedTensor expert_offsets() {
  OwnedTensor offsets(Shape{kExperts + 1}, DType::i32);
  offsets.data<int32_t>()[0] = 0;
  int32_t* offset = offsets.data<int32_t>();
  for (int64_t e = 0; e < kExperts; ++e) offset[e + 1] = offset[e] + kRowsPerExpert[e];
  return offsets;
}

OwnedTensor converted(const Tensor& x, DType dtype) {
  OwnedTensor result(x.shape(), dtype);
  cast_tensor(result, x);
  return result;
}

const Parameter& weight(const ParameterStore& store, int64_t expert, const char* projection) {
  return store["experts." + std::to_string(expert) + "." + projection + ".weight"];
}

// rows [begin, end) of an FP8 row matrix.
Fp8Matrix row_slice(const Fp8Rows& rows, int64_t begin, int64_t end) {
  return {rows.values.tensor().slice(begin, end), rows.scales.tensor().slice(begin, end), Fp8Scaling::tile_1x128};
}

Fp8Matrix weight_blocks(const Parameter& parameter, bool transposed) {
  const Fp8Weight& fp8 = parameter.fp8;
  return {transposed ? fp8.transposed_values : fp8.values, transposed ? fp8.transposed_scales : fp8.scales,
          Fp8Scaling::block_128x128};
}

// y [R, N] (+)= per expert e: rows(e) @ W_e^T, the dense FP8 GEMM on each expert's rows (the reference).
void per_expert_fp8(const Tensor& y, const Fp8Rows& rows, const ParameterStore& store, const char* projection,
                    bool transposed, float beta = 0.0f) {
  int64_t begin = 0;
  for (int64_t e = 0; e < kExperts; ++e) {
    int64_t end = begin + kRowsPerExpert[e];
    if (end > begin) {
      Fp8Matrix weights = weight_blocks(weight(store, e, projection), transposed);
      fp8_gemm(y.slice(begin, end), row_slice(rows, begin, end), weights, beta);
    }
    begin = end;
  }
}

void expect_same_bits(const Tensor& actual, const Tensor& expected, const char* what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  EXPECT_TRUE(testing::same_bytes(actual, expected)) << what;
}

void expect_same_tokens(const Fp8ExpertTokenBuffers& actual, const Fp8ExpertTokenBuffers& expected,
                        const char* what) {
  expect_same_bits(actual.values, expected.values, what);
  expect_same_bits(actual.scales, expected.scales, what);
}

// ||actual - expected|| / ||expected|| over fp32 tensors.
double relative_error(const Tensor& actual, const Tensor& expected) {
  double error = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double difference = actual.data<float>()[i] - expected.data<float>()[i];
    error += difference * difference;
    norm += static_cast<double>(expected.data<float>()[i]) * expected.data<float>()[i];
  }
  return std::sqrt(error / norm);
}

class RoutedExpertsFp8 : public ::testing::Test {
 protected:
  RoutedExpertsFp8()
      : store_(make_store(true)),
        experts_(store_, "experts.", kExperts),
        offsets_(expert_offsets()),
        x_(random_tensor(Shape{kRows, kHidden}, 21)),
        x_rows_(quantize_rows(x_, false)),
        d_out_(random_tensor(Shape{kRows, kHidden}, 22, 0.01f)) {}

  void forward(const Tensor& out) { experts_.forward_fp8(ctx_, out, x_rows_.matrix(), offsets_, {}); }

  // gate_proj's or up_proj's output as forward makes it: x's FP8 rows times each expert's FP8 weight, rounded to bf16.
  OwnedTensor projected(const char* projection) const {
    OwnedTensor product(Shape{kRows, kFfn}, DType::f32);  // [R, F]
    per_expert_fp8(product, x_rows_, store_, projection, false);
    return converted(product, DType::bf16);
  }

  // The output gradients in bf16 that the experts' backward quantises: d_out rounded to bf16; d_gate and d_up from
  // SwiGLU's backward of down_proj's FP8 input gradient, reading gate and up as cached in FP8 (1x128), dequantised.
  struct KeptGradients {
    OwnedTensor d_out, d_gate, d_up;  // [R, H], [R, F], [R, F] bf16
    OwnedTensor activation;           // [R, F] bf16: SwiGLU of forward's gate and up, rounded
  };
  KeptGradients expected_gradients() const {
    KeptGradients kept{converted(d_out_, DType::bf16), OwnedTensor(Shape{kRows, kFfn}, DType::bf16),
                       OwnedTensor(Shape{kRows, kFfn}, DType::bf16), OwnedTensor(Shape{kRows, kFfn}, DType::bf16)};
    OwnedTensor gate = projected("gate_proj"), up = projected("up_proj");
    swiglu_forward(kept.activation, gate, up);
    OwnedTensor d_activation(Shape{kRows, kFfn}, DType::f32);  // [R, F]
    per_expert_fp8(d_activation, quantize_rows(kept.d_out, false), store_, "down_proj", true);
    swiglu_backward(kept.d_gate, kept.d_up, d_activation, dequantize_rows(quantize_rows(gate, false)),
                    dequantize_rows(quantize_rows(up, false)));
    return kept;
  }

  ParameterStore store_;
  RoutedExperts experts_;
  OwnedTensor offsets_;
  OwnedTensor x_;        // [R, H] fp32
  Fp8Rows x_rows_;       // [R, H] x quantised 1x128: what the dispatch hands the experts
  OwnedTensor d_out_;    // [R, H] fp32
  RoutedExperts::Context ctx_;
};

TEST_F(RoutedExpertsFp8, StoreKeepsFp8CopiesAndNoComputeCopy) {
  EXPECT_TRUE(experts_.uses_fp8());
  EXPECT_EQ(experts_.compute_dtype(), DType::bf16);
  for (int64_t e = 0; e < kExperts; ++e) {
    EXPECT_TRUE(weight(store_, e, "down_proj").fp8.defined());
    EXPECT_EQ(weight(store_, e, "down_proj").compute.raw(), nullptr);
  }
  EXPECT_EQ(store_.compute_values().numel(), kHidden);  // the norm's only
  EXPECT_FALSE(RoutedExperts(make_store(false), "experts.", kExperts).uses_fp8());
}

TEST_F(RoutedExpertsFp8, ForwardIsThePerExpertFp8Products) {
  OwnedTensor out(Shape{kRows, kHidden}, DType::f32);  // [R, H]
  forward(out);
  // gate_proj and up_proj: x's FP8 rows times each expert's FP8 weight, rounded to bf16; SwiGLU reads them so, and
  // they are cached for its backward in FP8 (1x128 tiles).
  OwnedTensor gate_bf16 = projected("gate_proj"), up_bf16 = projected("up_proj");
  Fp8Rows gate_fp8 = quantize_rows(gate_bf16, false), up_fp8 = quantize_rows(up_bf16, false);
  expect_same_bits(ctx_.gate.values, gate_fp8.values, "gate");
  expect_same_bits(ctx_.gate.scales, gate_fp8.scales, "gate scales");
  expect_same_bits(ctx_.up.values, up_fp8.values, "up");
  expect_same_bits(ctx_.up.scales, up_fp8.scales, "up scales");
  // down_proj: the fp32 activation quantised 1x128; the activation is kept in bf16 for the weight gradient.
  OwnedTensor activation(Shape{kRows, kFfn}, DType::f32);
  swiglu_forward(activation, gate_bf16, up_bf16);
  // Kept for the weight gradient: the bf16 activation's token-padded FP8 copy only.
  OwnedTensor padded(Shape{kExperts + 1}, DType::i32);
  pad_expert_offsets(padded, offsets_);
  expect_same_tokens(ctx_.activation_tokens,
                     quantize_tokens_by_expert(converted(activation, DType::bf16), offsets_, padded, false),
                     "activation");
  EXPECT_EQ(ctx_.activation.tensor().raw(), nullptr);
  OwnedTensor expected(Shape{kRows, kHidden}, DType::f32);
  per_expert_fp8(expected, quantize_rows(activation, false), store_, "down_proj", false);
  expect_same_bits(out, expected, "out");
  EXPECT_EQ(ctx_.input.tensor().raw(), nullptr);  // not kept: the caller recomputes it
  EXPECT_EQ(ctx_.input_tokens.values.tensor().raw(), nullptr);

  // bf16 output: the same sums rounded once.
  RoutedExperts::Context bf16_ctx;
  OwnedTensor out_bf16(Shape{kRows, kHidden}, DType::bf16);
  experts_.forward_fp8(bf16_ctx, out_bf16, x_rows_.matrix(), offsets_, {});
  expect_same_bits(out_bf16, converted(expected, DType::bf16), "bf16 out");
}

TEST_F(RoutedExpertsFp8, InputGradientIsThePerExpertFp8Products) {
  OwnedTensor out(Shape{kRows, kHidden}, DType::f32);
  forward(out);
  KeptGradients expected = expected_gradients();
  OwnedTensor d_x(Shape{kRows, kHidden}, DType::f32);  // [R, H]
  experts_.backward_input(ctx_, d_x, converted(d_out_, DType::f32));
  // d_x = d_gate (1x128) @ W_gate^T's copy, plus d_up (1x128) @ W_up^T's copy, accumulated in fp32.
  OwnedTensor expected_d_x(Shape{kRows, kHidden}, DType::f32);
  per_expert_fp8(expected_d_x, quantize_rows(expected.d_gate, false), store_, "gate_proj", true);
  per_expert_fp8(expected_d_x, quantize_rows(expected.d_up, false), store_, "up_proj", true, 1.0f);
  expect_same_bits(d_x, expected_d_x, "d_x");
  // What is kept for the weight gradient: the three output gradients' token-padded FP8 copies, not the bf16 ones.
  OwnedTensor padded(Shape{kExperts + 1}, DType::i32);
  pad_expert_offsets(padded, offsets_);
  auto tokens = [&](const Tensor& gradient) { return quantize_tokens_by_expert(gradient, offsets_, padded, false); };
  expect_same_tokens(ctx_.d_out_tokens, tokens(expected.d_out), "d_out");
  expect_same_tokens(ctx_.d_gate_tokens, tokens(expected.d_gate), "d_gate");
  expect_same_tokens(ctx_.d_up_tokens, tokens(expected.d_up), "d_up");
  EXPECT_EQ(ctx_.d_out.tensor().raw(), nullptr);
  EXPECT_EQ(ctx_.d_gate_up.tensor().raw(), nullptr);
}

// The fp32 experts on the same master weights (and x as the FP8 rows give it): FP8 keeps 3 mantissa bits, so the
// results differ by a few percent, not more (a wrong or transposed weight copy would be off by ~100%).
TEST_F(RoutedExpertsFp8, StaysNearTheFp32Experts) {
  ParameterStore fp32_store = make_store(false);
  RoutedExperts fp32_experts(fp32_store, "experts.", kExperts);
  OwnedTensor x_dequantised(Shape{kRows, kHidden}, DType::f32);
  dequantize_1x128(x_dequantised, x_rows_.values, x_rows_.scales);
  OwnedTensor out(Shape{kRows, kHidden}, DType::f32), fp32_out(Shape{kRows, kHidden}, DType::f32);
  forward(out);
  RoutedExperts::Context fp32_ctx;
  fp32_experts.forward(fp32_ctx, fp32_out, x_dequantised, offsets_);
  double forward_error = relative_error(out, fp32_out);
  EXPECT_LT(forward_error, 0.08);
  EXPECT_GT(forward_error, 0.0);

  OwnedTensor d_x(Shape{kRows, kHidden}, DType::f32), fp32_d_x(Shape{kRows, kHidden}, DType::f32);
  experts_.backward_input(ctx_, d_x, converted(d_out_, DType::f32));
  fp32_experts.backward_input(fp32_ctx, fp32_d_x, converted(d_out_, DType::f32));
  double input_gradient_error = relative_error(d_x, fp32_d_x);
  std::printf("relative error against the fp32 experts: forward %.4f, input gradient %.4f\n", forward_error,
              input_gradient_error);
  EXPECT_LT(input_gradient_error, 0.08);
  EXPECT_GT(input_gradient_error, 0.0);
}

// The weight gradient is the FP8 grouped GEMM of the kept bf16 tensors, each quantised in 128x1 tiles along the
// tokens with every expert's tokens padded to 128 (down_proj: d_out and the activation; gate_proj and up_proj: their
// output gradients and x), bit for bit; it stays within FP8's few percent of the unquantised product; the empty
// expert's gradients are written as zeros.
TEST_F(RoutedExpertsFp8, WeightGradientIsTheFp8ProductOfTheKeptTensors) {
  OwnedTensor out(Shape{kRows, kHidden}, DType::f32);
  forward(out);
  KeptGradients expected = expected_gradients();
  OwnedTensor d_x(Shape{kRows, kHidden}, DType::f32);
  experts_.backward_input(ctx_, d_x, converted(d_out_, DType::f32));
  OwnedTensor x_bf16 = converted(x_, DType::bf16);
  struct Projection {
    const char* name;
    OwnedTensor d_y, input;  // [R, N], [R, K] bf16 as kept
  };
  Projection projections[] = {
      {"down_proj", converted(expected.d_out, DType::bf16), converted(expected.activation, DType::bf16)},
      {"gate_proj", converted(expected.d_gate, DType::bf16), converted(x_bf16, DType::bf16)},
      {"up_proj", converted(expected.d_up, DType::bf16), converted(x_bf16, DType::bf16)}};
  experts_.backward_weight(ctx_, &x_bf16.tensor());
  OwnedTensor padded(Shape{kExperts + 1}, DType::i32);
  pad_expert_offsets(padded, offsets_);
  for (const Projection& projection : projections) {
    Shape shape = weight(store_, 0, projection.name).grad.shape();
    OwnedTensor expected(Shape{kExperts, shape[0], shape[1]}, DType::f32);  // E x [N, K]
    ExpertWeights expected_grads{.first = Tensor(expected.tensor().raw(), shape, DType::f32, Device::cpu()),
                                 .expert_stride = shape.numel(),
                                 .experts = kExperts};
    grouped_gemm_fp8_weight_grad(expected_grads,
                                 quantize_tokens_by_expert(projection.d_y, offsets_, padded, false).tokens(),
                                 quantize_tokens_by_expert(projection.input, offsets_, padded, false).tokens(), padded);
    int64_t begin = 0;
    for (int64_t e = 0; e < kExperts; ++e) {
      const Tensor& grad = weight(store_, e, projection.name).grad;
      expect_same_bits(grad, expected_grads.expert(e), projection.name);
      int64_t end = begin + kRowsPerExpert[e];
      if (end > begin) {
        OwnedTensor unquantised(shape, DType::f32);  // [N, K]
        gemm(unquantised, converted(projection.d_y.tensor().slice(begin, end), DType::f32),
             converted(projection.input.tensor().slice(begin, end), DType::f32), {.transpose_a = true});
        double error = relative_error(grad, unquantised);
        EXPECT_LT(error, 0.08) << projection.name << " expert " << e;
        EXPECT_GT(error, 0.0) << projection.name << " expert " << e;
      } else {
        for (int64_t i = 0; i < grad.numel(); ++i) ASSERT_EQ(grad.data<float>()[i], 0.0f) << projection.name;
      }
      begin = end;
    }
  }
}

}  // namespace
}  // namespace hai
