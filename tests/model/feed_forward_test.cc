#include "model/feed_forward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/device/swiglu.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

constexpr const char* kPrefix = "model.layers.0.mlp.";

// fp8: FP8 copies of the three weights (fp8_gemm specs), compute dtype bf16, as precision.mode fp8 has them.
ParameterStore feed_forward_store(int64_t hidden, int64_t ffn, double init_std, bool fp8 = false) {
  std::string prefix = kPrefix;
  std::vector<ParameterSpec> specs = {
      {prefix + "gate_proj.weight", Shape{ffn, hidden}},
      {prefix + "up_proj.weight", Shape{ffn, hidden}},
      {prefix + "down_proj.weight", Shape{hidden, ffn}},
  };
  for (ParameterSpec& spec : specs) spec.fp8_gemm = fp8;
  ParameterStore store(std::move(specs), Device::cpu(), fp8 ? DType::bf16 : DType::f32, {.enabled = fp8});
  store.initialize(/*seed=*/7, init_std);
  store.refresh_compute_copy();
  return store;
}

void set_values(const Parameter& parameter, std::initializer_list<float> values) {
  std::copy(values.begin(), values.end(), parameter.value.data<float>());
}

// F, B and W of one call, with the store's gradients zeroed before W.
void forward_and_backward(const FeedForward& ffn, ParameterStore& store, FeedForward::Context& ctx, const Tensor& out,
                          const Tensor& d_x, const Tensor& x, const Tensor& d_out) {
  ffn.forward(ctx, out, x);
  ffn.backward_input(ctx, d_x, d_out);
  store.zero_grads();
  ffn.backward_weight(ctx);
}

TEST(FeedForward, KnownValues) {
  ParameterStore store = feed_forward_store(/*hidden=*/2, /*ffn=*/1, 0.0);
  set_values(store[std::string(kPrefix) + "gate_proj.weight"], {1.0f, 0.0f});
  set_values(store[std::string(kPrefix) + "up_proj.weight"], {0.0f, 2.0f});
  set_values(store[std::string(kPrefix) + "down_proj.weight"], {3.0f, -1.0f});
  FeedForward ffn(store, kPrefix);
  OwnedTensor x = testing::tensor_of({1, 2}, {1.0f, 0.5f});
  OwnedTensor out({1, 2}, DType::f32);
  FeedForward::Context ctx;
  ffn.forward(ctx, out, x);
  // gate = 1, up = 1, silu(1) * 1 = 1 / (1 + e^-1).
  double activation = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(out.data<float>()[0], 3.0 * activation, 1e-6);
  EXPECT_NEAR(out.data<float>()[1], -activation, 1e-6);
}

TEST(FeedForward, GradientsMatchFiniteDifferences) {
  constexpr int64_t kRows = 7, kHidden = 12, kFfn = 6;
  ParameterStore store = feed_forward_store(kHidden, kFfn, 0.5);
  FeedForward ffn(store, kPrefix);
  OwnedTensor x = testing::random_tensor({kRows, kHidden}, 1);
  OwnedTensor d_out = testing::random_tensor({kRows, kHidden}, 2);
  OwnedTensor out({kRows, kHidden}, DType::f32), d_x({kRows, kHidden}, DType::f32);

  FeedForward::Context ctx;
  forward_and_backward(ffn, store, ctx, out, d_x, x, d_out);

  auto loss = [&] {
    FeedForward::Context fresh;
    OwnedTensor y({kRows, kHidden}, DType::f32);
    ffn.forward(fresh, y, x);
    return testing::dot(d_out, y);
  };
  testing::check_gradient(x, d_x, loss, 1e-3, 1e-3, 1e-2);
  for (const char* weight : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) {
    SCOPED_TRACE(weight);
    const Parameter& parameter = store[std::string(kPrefix) + weight];
    testing::check_gradient(parameter.value, parameter.grad, loss, 1e-3, 1e-3, 1e-2);
  }
}

TEST(FeedForward, WeightGradientsAccumulate) {
  constexpr int64_t kRows = 3, kHidden = 4, kFfn = 5;
  ParameterStore store = feed_forward_store(kHidden, kFfn, 0.5);
  FeedForward ffn(store, kPrefix);
  OwnedTensor x = testing::random_tensor({kRows, kHidden}, 3);
  OwnedTensor d_out = testing::random_tensor({kRows, kHidden}, 4);
  OwnedTensor out({kRows, kHidden}, DType::f32), d_x({kRows, kHidden}, DType::f32);
  FeedForward::Context ctx;
  forward_and_backward(ffn, store, ctx, out, d_x, x, d_out);
  std::vector<float> once(store.grads().data<float>(), store.grads().data<float>() + store.grads().numel());
  // backward_weight released ctx: a second micro-batch of the same rows.
  ffn.forward(ctx, out, x);
  ffn.backward_input(ctx, d_x, d_out);
  ffn.backward_weight(ctx);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_EQ(store.grads().data<float>()[i], 2.0f * once[i]) << i;
}

// A routed expert runs on its block of rows: the result for a row slice equals those rows of the whole batch,
// and backward_input with accumulate adds to what d_x holds.
TEST(FeedForward, RowSliceEqualsRowsOfTheWholeBatch) {
  constexpr int64_t kRows = 6, kHidden = 12, kFfn = 6, kBegin = 2, kEnd = 5;
  ParameterStore store = feed_forward_store(kHidden, kFfn, 0.5);
  FeedForward ffn(store, kPrefix);
  OwnedTensor x = testing::random_tensor({kRows, kHidden}, 5);
  OwnedTensor d_out = testing::random_tensor({kRows, kHidden}, 6);
  OwnedTensor out({kRows, kHidden}, DType::f32), d_x({kRows, kHidden}, DType::f32);
  FeedForward::Context whole;
  ffn.forward(whole, out, x);
  ffn.backward_input(whole, d_x, d_out);

  OwnedTensor slice_out({kEnd - kBegin, kHidden}, DType::f32);
  OwnedTensor slice_d_x = testing::random_tensor({kEnd - kBegin, kHidden}, 8);
  std::vector<float> prior(slice_d_x.data<float>(), slice_d_x.data<float>() + slice_d_x.numel());
  FeedForward::Context part;
  ffn.forward(part, slice_out, x.tensor().slice(kBegin, kEnd));
  ffn.backward_input(part, slice_d_x, d_out.tensor().slice(kBegin, kEnd), /*accumulate=*/true);
  for (int64_t i = 0; i < slice_out.numel(); ++i) {
    EXPECT_EQ(slice_out.data<float>()[i], out.data<float>()[kBegin * kHidden + i]) << i;
    EXPECT_NEAR(slice_d_x.data<float>()[i], prior[i] + d_x.data<float>()[kBegin * kHidden + i], 1e-6) << i;
  }
}

// In fp8 training the three FP8 projections compute in bf16: x (written in bf16 by its producer, input_dtype) and
// SwiGLU's activation are bf16 before their e4m3 quantisation, while gate and up reach SwiGLU in fp32, as the GEMMs
// write them: the block's output is, bit for bit, the composition of its parts with exactly those roundings. The
// output gradients kept for the weight gradients are their FP8 transposes (one byte an element), the dgrad rows
// released.
// In fp8 training the down projection keeps d_out in bf16 (output_grad_dtype) and quantises it from there: handed
// over so (a decoder layer's norm writes that rounding in its pass), it gives the bits of d_out passed in fp32.
TEST(FeedForward, TakesItsOutputGradientInOutputGradDtype) {
  constexpr int64_t kRows = 6, kHidden = 5, kFfn = 7;
  EXPECT_EQ(FeedForward(feed_forward_store(kHidden, kFfn, 0.5), kPrefix).output_grad_dtype(), DType::f32);
  ParameterStore store = feed_forward_store(kHidden, kFfn, 0.5, /*fp8=*/true);
  FeedForward ffn(store, kPrefix);
  ASSERT_EQ(ffn.output_grad_dtype(), DType::bf16);
  OwnedTensor x = testing::random_tensor({kRows, kHidden}, 30), d_out = testing::random_tensor({kRows, kHidden}, 31);
  auto gradients = [&](bool hand_over_bf16) {  // d_x, then the three weights' gradients
    FeedForward::Context ctx;
    OwnedTensor out({kRows, kHidden}, DType::f32), d_x({kRows, kHidden}, DType::f32);
    ffn.forward(ctx, out, x);
    if (hand_over_bf16) {
      ffn.backward_input(ctx, d_x, to_compute_dtype(d_out, DType::bf16));
    } else {
      ffn.backward_input(ctx, d_x, d_out);
    }
    store.zero_grads();
    ffn.backward_weight(ctx);
    std::vector<OwnedTensor> results;
    results.push_back(std::move(d_x));
    results.push_back(host_copy(store.grads()));
    return results;
  };
  std::vector<OwnedTensor> from_fp32 = gradients(false), handed_over = gradients(true);
  EXPECT_TRUE(testing::same_bytes(handed_over[0], from_fp32[0]));
  EXPECT_TRUE(testing::same_bytes(handed_over[1], from_fp32[1]));
  EXPECT_GT(testing::dot(handed_over[1], handed_over[1]), 0.0);
}

// And SwiGLU's inputs are cached in FP8 (1x128) for its backward, which reads them dequantised.
TEST(FeedForward, Fp8RoundsOnlyTheProjectionInputsAndGradientsToBf16) {
  constexpr int64_t kRows = 9, kHidden = 200, kFfn = 136;
  ParameterStore store = feed_forward_store(kHidden, kFfn, 0.05, /*fp8=*/true);
  FeedForward ffn(store, kPrefix);
  ASSERT_EQ(ffn.input_dtype(), DType::bf16);
  OwnedTensor x_bf16 = to_compute_dtype(testing::random_tensor({kRows, kHidden}, 10), DType::bf16);  // [N, H]
  OwnedTensor out({kRows, kHidden}, DType::f32);
  FeedForward::Context ctx;
  ffn.forward(ctx, out, x_bf16);

  Linear gate(store[std::string(kPrefix) + "gate_proj.weight"]), up(store[std::string(kPrefix) + "up_proj.weight"]);
  Linear down(store[std::string(kPrefix) + "down_proj.weight"]);
  OwnedTensor gate_out({kRows, kFfn}, DType::f32), up_out({kRows, kFfn}, DType::f32), saved;
  gate.forward(gate_out, x_bf16, saved);
  up.forward(up_out, x_bf16, saved);
  OwnedTensor activation({kRows, kFfn}, DType::bf16);  // [N, F] the fp32 SwiGLU rounded once
  swiglu_forward(activation, gate_out, up_out);
  OwnedTensor expected({kRows, kHidden}, DType::f32);
  down.forward(expected, activation, saved);
  EXPECT_TRUE(testing::same_bytes(out, expected));

  // SwiGLU's inputs are cached in FP8: the fp32 gate and up its forward read, quantised 1x128.
  Fp8Rows gate_fp8 = quantize_rows(gate_out, false), up_fp8 = quantize_rows(up_out, false);
  EXPECT_TRUE(testing::same_bytes(ctx.gate.values, gate_fp8.values));
  EXPECT_TRUE(testing::same_bytes(ctx.gate.scales, gate_fp8.scales));
  EXPECT_TRUE(testing::same_bytes(ctx.up.values, up_fp8.values));
  EXPECT_TRUE(testing::same_bytes(ctx.up.scales, up_fp8.scales));

  OwnedTensor d_x({kRows, kHidden}, DType::f32);
  OwnedTensor d_out = testing::random_tensor({kRows, kHidden}, 11);  // [N, H]
  ffn.backward_input(ctx, d_x, d_out);
  // SwiGLU's backward reads gate and up dequantised (fp32) and writes d_gate and d_up in bf16.
  OwnedTensor d_activation({kRows, kFfn}, DType::f32);  // [N, F]
  down.backward_input(d_activation, to_compute_dtype(d_out, DType::bf16));
  OwnedTensor d_gate({kRows, kFfn}, DType::bf16), d_up({kRows, kFfn}, DType::bf16);  // [N, F]
  swiglu_backward(d_gate, d_up, d_activation, dequantize_rows(gate_fp8), dequantize_rows(up_fp8));
  OwnedTensor expected_d_x({kRows, kHidden}, DType::f32);
  gate.backward_input(expected_d_x, d_gate);
  up.backward_input(expected_d_x, d_up, /*accumulate=*/true);
  EXPECT_TRUE(testing::same_bytes(d_x, expected_d_x));
  EXPECT_EQ(ctx.gate.values.tensor().raw(), nullptr);  // released by SwiGLU's backward
  for (const Linear::PreparedOutputGrad* kept : {&ctx.d_out, &ctx.d_gate, &ctx.d_up}) {
    EXPECT_EQ(kept->saved.tensor().dtype(), DType::u8);
    EXPECT_EQ(kept->tokens, kRows);
    EXPECT_EQ(kept->rows.tensor().raw(), nullptr);
  }
  ffn.backward_weight(ctx);
}

}  // namespace
}  // namespace hai
