#include "model/moe_layer.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "model/linear.h"
#include "model/parameters.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// 8 routed experts in 4 groups of 2, each token picks 2 experts from its 2 best groups; 1 shared expert;
// 2 sequences of 5 tokens. alpha is large so that the balance loss is visible in the finite differences.
constexpr int64_t kLayer = 1, kHidden = 12, kExperts = 8, kTopK = 2, kSeqLen = 5, kTokens = 10;
constexpr float kAlpha = 0.1f, kScaling = 2.5f;

ModelConfig tiny_moe_model() {
  ModelConfig model;
  model.hidden_size = kHidden;
  model.num_layers = 2;
  model.first_dense_layers = 1;
  model.mtp_depth = 0;
  model.moe.routed_experts = kExperts;
  model.moe.shared_experts = 1;
  model.moe.experts_per_token = kTopK;
  model.moe.expert_ffn_size = 6;
  model.moe.groups = 4;
  model.moe.groups_per_token = 2;
  model.moe.routed_scaling_factor = kScaling;
  model.moe.balance_loss_alpha = kAlpha;
  return model;
}

// Only the parameters of the MoE layer's feed-forward ("model.layers.1.mlp.").
std::vector<ParameterSpec> moe_parameters(const ModelConfig& model) {
  std::vector<ParameterSpec> specs;
  for (ParameterSpec& spec : deepseek_v3_parameters(model)) {
    if (spec.name.starts_with(layer_prefix(kLayer) + "mlp.")) specs.push_back(std::move(spec));
  }
  return specs;
}

std::string mlp_name(const std::string& suffix) { return layer_prefix(kLayer) + "mlp." + suffix; }

struct MoeFixture {
  explicit MoeFixture(DType compute_dtype = DType::f32)
      : model(tiny_moe_model()), store(moe_parameters(model), Device::cpu(), compute_dtype) {
    store.initialize(/*seed=*/11, /*init_std=*/0.3);
    store.refresh_compute_copy();
  }
  float* bias() const { return store[mlp_name("gate.e_score_correction_bias")].value.data<float>(); }

  ModelConfig model;
  ParameterStore store;
  OwnedTensor x = testing::random_tensor({kTokens, kHidden}, 21);      // [T, H]
  OwnedTensor d_out = testing::random_tensor({kTokens, kHidden}, 22);  // [T, H]
};

// The layer's balance loss as the model sums it: the mean over the sequences, added into a device scalar.
double balance_loss(const MoeLayer& layer, const MoeLayer::Context& ctx) {
  OwnedTensor total = testing::tensor_of(Shape{1}, {0.0f});
  layer.accumulate_balance_loss(ctx, total);
  return total.data<float>()[0];
}

std::vector<int32_t> indices_of(const Tensor& topk_indices) {
  const int32_t* data = topk_indices.data<int32_t>();
  return {data, data + topk_indices.numel()};
}

// out: [1, H] <- the FeedForward named `prefix` on row t of x alone.
OwnedTensor run_ffn_on_row(const ParameterStore& store, const std::string& prefix, const Tensor& x, int64_t t) {
  FeedForward ffn(store, prefix);
  FeedForward::Context ctx;
  OwnedTensor out({1, kHidden}, DType::f32);
  ffn.forward(ctx, out, x.slice(t, t + 1));
  return out;
}

// The routed experts that received at least one token, ascending.
std::vector<int64_t> experts_with_tokens(const Tensor& topk_indices) {
  std::vector<int64_t> experts;
  std::vector<int32_t> chosen = indices_of(topk_indices);
  for (int64_t e = 0; e < kExperts; ++e) {
    if (std::find(chosen.begin(), chosen.end(), e) != chosen.end()) experts.push_back(e);
  }
  return experts;
}

std::vector<int64_t> spread_indices(int64_t numel, int64_t count) {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i) indices.push_back((i * numel) / count + i % 3);
  return indices;
}

// y = shared(x) + sum_k w_k * expert_{idx_k}(x) (+ residual) for every token, against FeedForwards run on that token
// alone and combined in the layer's order (from the residual or 0, k ascending, then the shared expert): bitwise.
void expect_weighted_experts_plus_shared(const MoeFixture& f, const MoeLayer::Context& ctx, const Tensor& out,
                                         const Tensor& residual = {}) {
  const int32_t* idx = ctx.topk_indices.data<int32_t>();
  const float* weights = ctx.topk_weights.data<float>();
  for (int64_t t = 0; t < kTokens; ++t) {
    OwnedTensor first = run_ffn_on_row(f.store, mlp_name(fmt::format("experts.{}.", idx[t * kTopK])), f.x, t);
    OwnedTensor second = run_ffn_on_row(f.store, mlp_name(fmt::format("experts.{}.", idx[t * kTopK + 1])), f.x, t);
    OwnedTensor shared = run_ffn_on_row(f.store, mlp_name("shared_experts."), f.x, t);
    for (int64_t h = 0; h < kHidden; ++h) {
      float combined = residual.defined() ? residual.data<float>()[t * kHidden + h] : 0.0f;
      combined += weights[t * kTopK] * first.data<float>()[h];
      combined += weights[t * kTopK + 1] * second.data<float>()[h];
      EXPECT_EQ(out.data<float>()[t * kHidden + h], combined + shared.data<float>()[h]) << t << ", " << h;
    }
  }
}

TEST(MoeLayer, OutputIsWeightedExpertsPlusShared) {
  MoeFixture f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen);
  EXPECT_GE(experts_with_tokens(ctx.topk_indices).size(), 4u);
  expect_weighted_experts_plus_shared(f, ctx, out);
}

// With the decoder layer's residual h, the combine starts from it: out = (h + the routed experts) + the shared expert.
TEST(MoeLayer, OutputStartsFromTheResidual) {
  MoeFixture f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor residual = testing::random_tensor({kTokens, kHidden}, 23);  // [T, H]
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen, residual);
  expect_weighted_experts_plus_shared(f, ctx, out, residual);
}

// The scores come from the fp32 master gate weight (not the bf16 compute copy), the weights are the chosen
// scores renormalised and scaled; checked in double.
TEST(MoeLayer, ScoresUseTheFp32GateAndWeightsAreRenormalised) {
  MoeFixture f(DType::bf16);
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen);
  const float* gate = f.store[mlp_name("gate.weight")].value.data<float>();  // [E, H]
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t e = 0; e < kExperts; ++e) {
      double logit = 0;
      for (int64_t h = 0; h < kHidden; ++h) logit += double{f.x.data<float>()[t * kHidden + h]} * gate[e * kHidden + h];
      EXPECT_NEAR(ctx.scores.data<float>()[t * kExperts + e], 1.0 / (1.0 + std::exp(-logit)), 1e-6) << t << ", " << e;
    }
    const float* score = ctx.scores.data<float>() + t * kExperts;
    const int32_t* idx = ctx.topk_indices.data<int32_t>() + t * kTopK;
    double sum = double{score[idx[0]]} + score[idx[1]];
    for (int64_t k = 0; k < kTopK; ++k) {
      EXPECT_NEAR(ctx.topk_weights.data<float>()[t * kTopK + k], score[idx[k]] / sum * kScaling, 1e-6);
    }
  }
}

// Sequence-wise balance loss by hand, per sequence of 5 tokens, averaged over the 2 sequences:
// f_i = E / (K L) count_i, P_i = 1/L sum_t s_ti / sum_j s_tj, loss = alpha sum_i f_i P_i.
TEST(MoeLayer, BalanceLossMatchesHandComputation) {
  MoeFixture f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen);
  const float* scores = ctx.scores.data<float>();
  const int32_t* idx = ctx.topk_indices.data<int32_t>();
  double mean = 0;
  for (int64_t n = 0; n < kTokens / kSeqLen; ++n) {
    std::vector<double> f_i(kExperts, 0.0), p_i(kExperts, 0.0);
    for (int64_t t = n * kSeqLen; t < (n + 1) * kSeqLen; ++t) {
      for (int64_t k = 0; k < kTopK; ++k) f_i[idx[t * kTopK + k]] += double{kExperts} / (kTopK * kSeqLen);
      double z = 0;
      for (int64_t e = 0; e < kExperts; ++e) z += scores[t * kExperts + e];
      for (int64_t e = 0; e < kExperts; ++e) p_i[e] += scores[t * kExperts + e] / z / kSeqLen;
    }
    double loss = 0;
    for (int64_t e = 0; e < kExperts; ++e) loss += kAlpha * f_i[e] * p_i[e];
    EXPECT_NEAR(ctx.sequence_balance_loss.data<float>()[n], loss, 1e-7) << n;
    mean += loss / 2;
  }
  EXPECT_NEAR(balance_loss(layer, ctx), mean, 1e-7);
  EXPECT_GT(balance_loss(layer, ctx), 0.0);
}

// A large bias on expert 5 makes every token choose it (selection only): load[5] = T, the loads sum to T * K and
// match the chosen indices; a second micro-batch adds to the same buffer.
TEST(MoeLayer, BiasSteersSelectionAndLoadCountsTokens) {
  MoeFixture f;
  f.bias()[5] = 10.0f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen);
  OwnedTensor load({kExperts}, DType::i32);
  layer.accumulate_load(ctx, load);
  std::vector<int32_t> expected(kExperts, 0);
  for (int32_t e : indices_of(ctx.topk_indices)) ++expected[e];
  EXPECT_EQ(expected[5], kTokens);
  for (int64_t t = 0; t < kTokens; ++t) EXPECT_EQ(ctx.topk_indices.data<int32_t>()[t * kTopK], 5) << t;
  int32_t total = 0;
  for (int64_t e = 0; e < kExperts; ++e) {
    EXPECT_EQ(load.data<int32_t>()[e], expected[e]) << e;
    total += load.data<int32_t>()[e];
  }
  EXPECT_EQ(total, kTokens * kTopK);
  layer.accumulate_load(ctx, load);
  for (int64_t e = 0; e < kExperts; ++e) EXPECT_EQ(load.data<int32_t>()[e], 2 * expected[e]) << e;
  // The bias steers the choice only: expert 5's weight is its own score renormalised.
  const float* score = ctx.scores.data<float>();
  const int32_t* idx = ctx.topk_indices.data<int32_t>();
  double sum = double{score[5]} + score[idx[1]];
  EXPECT_NEAR(ctx.topk_weights.data<float>()[0], score[5] / sum * kScaling, 1e-6);
}

// The routing's top-k is piecewise constant, so the finite differences only hold while the selection stays the
// same. The test keeps it fixed by construction and verifies it: every perturbed forward must choose exactly the
// experts of the unperturbed one (the steps of 1e-3 and 1e-2 move the scores by at most ~1e-3, less than the
// selection margins of these inputs); a perturbation that changed the routing fails the test instead of passing
// silently.
class MoeGradient : public ::testing::Test {
 protected:
  // The objective: sum(d_out * out) + balance_loss_grad * balance_loss.
  double objective(float balance_loss_grad, const Tensor& d_out) {
    MoeLayer::Context ctx;
    OwnedTensor out({kTokens, kHidden}, DType::f32);
    layer.forward(ctx, out, f.x, kSeqLen);
    EXPECT_EQ(indices_of(ctx.topk_indices), routing) << "a perturbation changed the routing";
    return testing::dot(d_out, out) + balance_loss_grad * balance_loss(layer, ctx);
  }

  // Analytic gradients into d_x and the store's gradient buffer; records the unperturbed routing.
  void backward(float balance_loss_grad, const Tensor& d_out) {
    MoeLayer::Context ctx;
    OwnedTensor out({kTokens, kHidden}, DType::f32);
    layer.forward(ctx, out, f.x, kSeqLen);
    routing = indices_of(ctx.topk_indices);
    layer.backward_input(ctx, d_x, d_out, balance_loss_grad);
    f.store.zero_grads();
    layer.backward_weight(ctx);
  }

  void check_parameter(const std::string& suffix, const std::function<double()>& loss, double step = 1e-3,
                       double atol = 1e-3) {
    SCOPED_TRACE(suffix);
    const Parameter& parameter = f.store[mlp_name(suffix)];
    testing::check_gradient(parameter.value, parameter.grad, loss, step, atol, 1e-2,
                            spread_indices(parameter.value.numel(), 8));
  }

  MoeFixture f;
  MoeLayer layer{f.model, f.store, kLayer};
  OwnedTensor d_x{Shape{kTokens, kHidden}, DType::f32};  // [T, H]
  std::vector<int32_t> routing;
};

TEST_F(MoeGradient, InputAndEveryParameterKind) {
  constexpr float kBalanceGrad = 10.0f;
  backward(kBalanceGrad, f.d_out);
  auto loss = [&] { return objective(kBalanceGrad, f.d_out); };
  testing::check_gradient(f.x, d_x, loss, 1e-3, 1e-3, 1e-2);
  check_parameter("gate.weight", loss);
  for (const char* weight : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) {
    check_parameter(std::string("shared_experts.") + weight, loss);
  }
  std::vector<int64_t> used = experts_with_tokens(Tensor(routing.data(), Shape{kTokens, kTopK}, DType::i32));
  ASSERT_GE(used.size(), 4u);
  for (int64_t expert : used) {
    for (const char* weight : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) {
      check_parameter(fmt::format("experts.{}.{}", expert, weight), loss);
    }
  }
}

// The balance loss alone (d_out = 0): its gradient reaches x and the gate weight through the scores. Its gradients
// are small, so the step is 1e-2: the float rounding of the objective (~1e-6) then adds at most ~5e-5 to the
// differences.
TEST_F(MoeGradient, BalanceLossAlone) {
  constexpr float kBalanceGrad = 100.0f;
  OwnedTensor zero({kTokens, kHidden}, DType::f32);
  backward(kBalanceGrad, zero);
  auto loss = [&] { return objective(kBalanceGrad, zero); };
  testing::check_gradient(f.x, d_x, loss, 1e-2, 1e-4, 1e-2);
  check_parameter("gate.weight", loss, 1e-2, 1e-4);
  double gate_grad_l1 = 0;
  const Parameter& gate = f.store[mlp_name("gate.weight")];
  for (int64_t i = 0; i < gate.grad.numel(); ++i) gate_grad_l1 += std::fabs(gate.grad.data<float>()[i]);
  EXPECT_GT(gate_grad_l1, 1e-3);
}

// With a large bias on experts 0 and 1 (group 0), every token chooses them: the other experts get no rows, are
// skipped, and their gradients stay zero; the output still is the weighted sum of experts 0 and 1 plus shared.
TEST(MoeLayer, EmptyExpertsAreSkipped) {
  MoeFixture f;
  f.bias()[0] = 10.0f;
  f.bias()[1] = 10.0f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32), d_x({kTokens, kHidden}, DType::f32);
  layer.forward(ctx, out, f.x, kSeqLen);
  layer.backward_input(ctx, d_x, f.d_out, 1.0f);
  f.store.zero_grads();
  layer.backward_weight(ctx);
  EXPECT_EQ(experts_with_tokens(ctx.topk_indices), (std::vector<int64_t>{0, 1}));
  auto grad_l1 = [&](int64_t expert) {
    double sum = 0;
    for (const char* weight : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) {
      const Tensor& grad = f.store[mlp_name(fmt::format("experts.{}.{}", expert, weight))].grad;
      for (int64_t i = 0; i < grad.numel(); ++i) sum += std::fabs(grad.data<float>()[i]);
    }
    return sum;
  };
  EXPECT_GT(grad_l1(0), 0.0);
  EXPECT_GT(grad_l1(1), 0.0);
  for (int64_t e = 2; e < kExperts; ++e) EXPECT_EQ(grad_l1(e), 0.0) << e;
  expect_weighted_experts_plus_shared(f, ctx, out);
}

// The output, input gradient and parameter gradients of a forward and backward on x and d_out ([T, H] fp32), with
// x_bf16 and d_out_bf16 ([T, H] bf16, or empty) handed over beside them.
std::vector<OwnedTensor> forward_and_backward(MoeFixture& f, const MoeLayer& layer, OwnedTensor x_bf16,
                                              OwnedTensor d_out_bf16 = {}) {
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32), d_x({kTokens, kHidden}, DType::f32);
  OwnedTensor x = host_copy(f.x);
  layer.forward(ctx, out, std::move(x), kSeqLen, /*residual=*/{}, std::move(x_bf16));
  layer.backward_input(ctx, d_x, f.d_out, 1.0f, std::move(d_out_bf16));
  f.store.zero_grads();
  layer.backward_weight(ctx);
  std::vector<OwnedTensor> results;
  results.push_back(std::move(out));
  results.push_back(std::move(d_x));
  results.push_back(host_copy(f.store.grads()));
  return results;
}

// In bf16 training the experts (and the shared expert) read x rounded to bf16: handed over by x's producer (the
// decoder layer's norm writes it in its own pass), that copy replaces the layer's rounding pass, and the output and
// every gradient are the same bits (and a copy of other values changes the output: it is what the experts read). In
// fp32 training the layer reads no copy and refuses one.
TEST(MoeLayer, TakesTheBf16InputItsProducerWrote) {
  MoeFixture f(DType::bf16);
  MoeLayer layer(f.model, f.store, kLayer);
  ASSERT_TRUE(layer.takes_bf16_input());
  std::vector<OwnedTensor> rounded_here = forward_and_backward(f, layer, OwnedTensor());
  std::vector<OwnedTensor> handed_over = forward_and_backward(f, layer, to_compute_dtype(f.x, DType::bf16));
  for (size_t i = 0; i < rounded_here.size(); ++i) {
    EXPECT_TRUE(testing::same_bytes(handed_over[i], rounded_here[i])) << "result " << i;
  }
  double grad_l1 = 0;  // the gradients compared are not all zero
  for (int64_t i = 0; i < f.store.grads().numel(); ++i) grad_l1 += std::fabs(handed_over[2].data<float>()[i]);
  EXPECT_GT(grad_l1, 1.0);
  OwnedTensor zeros = zero_tensor({kTokens, kHidden}, DType::bf16);
  EXPECT_FALSE(testing::same_bytes(forward_and_backward(f, layer, std::move(zeros))[0], rounded_here[0]));

  MoeFixture fp32;
  MoeLayer fp32_layer(fp32.model, fp32.store, kLayer);
  EXPECT_FALSE(fp32_layer.takes_bf16_input());
  EXPECT_THROW(forward_and_backward(fp32, fp32_layer, to_compute_dtype(fp32.x, DType::bf16)), Error);
}

// The same for the output gradient: the shared expert's down projection keeps d_out rounded to bf16, and the copy
// handed over (the layer above's input norm writes it in its pass) gives the bits of the layer's own rounding.
TEST(MoeLayer, TakesTheBf16OutputGradientItsProducerWrote) {
  MoeFixture f(DType::bf16);
  MoeLayer layer(f.model, f.store, kLayer);
  ASSERT_TRUE(layer.takes_bf16_output_grad());
  std::vector<OwnedTensor> rounded_here = forward_and_backward(f, layer, OwnedTensor());
  std::vector<OwnedTensor> handed_over =
      forward_and_backward(f, layer, OwnedTensor(), to_compute_dtype(f.d_out, DType::bf16));
  for (size_t i = 0; i < rounded_here.size(); ++i) {
    EXPECT_TRUE(testing::same_bytes(handed_over[i], rounded_here[i])) << "result " << i;
  }
  OwnedTensor zeros = zero_tensor({kTokens, kHidden}, DType::bf16);  // what the shared expert's gradients read
  EXPECT_FALSE(testing::same_bytes(forward_and_backward(f, layer, OwnedTensor(), std::move(zeros))[2],
                                   rounded_here[2]));

  MoeFixture fp32;
  MoeLayer fp32_layer(fp32.model, fp32.store, kLayer);
  EXPECT_FALSE(fp32_layer.takes_bf16_output_grad());
  EXPECT_THROW(forward_and_backward(fp32, fp32_layer, OwnedTensor(), to_compute_dtype(fp32.d_out, DType::bf16)),
               Error);
}

TEST(MoeLayer, RejectsPartialSequences) {
  MoeFixture f;
  MoeLayer layer(f.model, f.store, kLayer);
  MoeLayer::Context ctx;
  OwnedTensor out({kTokens, kHidden}, DType::f32);
  EXPECT_THROW(layer.forward(ctx, out, f.x, /*seq_len=*/4), Error);
}

}  // namespace
}  // namespace hai
