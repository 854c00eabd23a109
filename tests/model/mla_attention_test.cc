#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/rope_table.h"
#include "framework/params/parameter_store.h"
#include "model/mla_attention.h"
#include "model/parameters.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kSeqLen = 5;
constexpr int64_t kTokens = kBatch * kSeqLen;
const std::string kAttention = "model.layers.0.self_attn.";

// Odd sizes everywhere (RoPE needs an even width), and YaRN active (max_seq_len 8 > original 4), so that the
// softmax scale carries mscale^2.
ModelConfig tiny_model() {
  ModelConfig m;
  m.hidden_size = 7;
  m.num_layers = 1;
  m.first_dense_layers = 1;
  m.num_heads = 3;
  m.q_lora_rank = 5;
  m.kv_lora_rank = 6;
  m.qk_nope_head_dim = 3;
  m.qk_rope_head_dim = 4;
  m.v_head_dim = 5;
  m.norm_eps = 1e-6;
  m.max_seq_len = 8;
  m.rope.yarn.factor = 4.0;
  m.rope.yarn.original_max_position = 4;
  return m;
}

OwnedTensor positions_of(int64_t tokens) {
  OwnedTensor positions(Shape{tokens}, DType::i32);
  for (int64_t t = 0; t < tokens; ++t) positions.data<int32_t>()[t] = static_cast<int32_t>(t % kSeqLen);
  return positions;
}

// Plain double-precision MLA, written from docs/deepseek-v3.md "MLA, exactly" without the device ops.
class ReferenceMla {
 public:
  ReferenceMla(const ModelConfig& m, const ParameterStore& store) : m_(m), store_(store) {
    RopeSettings settings = mla_rope_settings(m);
    inverse_frequencies_ = rope_inverse_frequencies(settings);
    double mscale = 0.1 * m.rope.yarn.mscale * std::log(m.rope.yarn.factor) + 1.0;
    scale_ = mscale * mscale / std::sqrt(static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim));
  }

  // [T, hidden] of x [T, hidden], T = batch * kSeqLen
  std::vector<double> forward(const Tensor& x) const {
    int64_t tokens = x.size(0);
    int64_t heads = m_.num_heads, nope = m_.qk_nope_head_dim, qk = nope + m_.qk_rope_head_dim;
    std::vector<double> input(x.data<float>(), x.data<float>() + x.numel());
    std::vector<double> c_q = rms_norm(linear("q_a_proj", input, tokens), "q_a_layernorm", tokens);  // [T, q_lora]
    std::vector<double> q = linear("q_b_proj", c_q, tokens);                                         // [T, H, qk]
    std::vector<double> ckv = linear("kv_a_proj_with_mqa", input, tokens);  // [T, kv_lora + rope]
    int64_t ckv_width = m_.kv_lora_rank + m_.qk_rope_head_dim;
    std::vector<double> c_kv;  // [T, kv_lora]
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < m_.kv_lora_rank; ++c) c_kv.push_back(ckv[t * ckv_width + c]);
      rotate(&ckv[t * ckv_width + m_.kv_lora_rank], t % kSeqLen);
      for (int64_t h = 0; h < heads; ++h) rotate(&q[(t * heads + h) * qk + nope], t % kSeqLen);
    }
    std::vector<double> kv = linear("kv_b_proj", rms_norm(c_kv, "kv_a_layernorm", tokens), tokens);  // [T, H, nope+dv]
    return linear("o_proj", attend(q, ckv, kv, tokens), tokens);
  }

 private:
  // o: [T, H, dv] <- q: [T, H, qk] (rotated), ckv: [T, kv_lora + rope] (k_rope rotated), kv: [T, H, nope + dv];
  // causal softmax within each sequence of kSeqLen.
  std::vector<double> attend(const std::vector<double>& q, const std::vector<double>& ckv,
                             const std::vector<double>& kv, int64_t tokens) const {
    int64_t heads = m_.num_heads, nope = m_.qk_nope_head_dim, dv = m_.v_head_dim, qk = nope + m_.qk_rope_head_dim;
    int64_t ckv_width = m_.kv_lora_rank + m_.qk_rope_head_dim;
    auto key = [&](int64_t t, int64_t h, int64_t c) {  // [k_nope of head h | k_rope shared by the heads]
      return c < nope ? kv[(t * heads + h) * (nope + dv) + c] : ckv[t * ckv_width + m_.kv_lora_rank + c - nope];
    };
    std::vector<double> o(tokens * heads * dv, 0.0);
    for (int64_t i = 0; i < tokens; ++i) {
      int64_t first = i - i % kSeqLen;
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<double> weights;  // exp(score) of keys first..i
        double total = 0;
        for (int64_t j = first; j <= i; ++j) {
          double score = 0;
          for (int64_t c = 0; c < qk; ++c) score += q[(i * heads + h) * qk + c] * key(j, h, c);
          weights.push_back(std::exp(score * scale_));
          total += weights.back();
        }
        for (int64_t j = first; j <= i; ++j) {
          for (int64_t c = 0; c < dv; ++c) {
            o[(i * heads + h) * dv + c] += weights[j - first] / total * kv[(j * heads + h) * (nope + dv) + nope + c];
          }
        }
      }
    }
    return o;
  }

  // [T, out] <- [T, in] @ W^T
  std::vector<double> linear(const std::string& name, const std::vector<double>& in, int64_t tokens) const {
    const Tensor& weight = store_[kAttention + name + ".weight"].value;  // [out, in]
    int64_t outs = weight.size(0), ins = weight.size(1);
    std::vector<double> out(tokens * outs, 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < outs; ++o) {
        for (int64_t i = 0; i < ins; ++i) out[t * outs + o] += in[t * ins + i] * weight.data<float>()[o * ins + i];
      }
    }
    return out;
  }

  std::vector<double> rms_norm(std::vector<double> rows, const std::string& name, int64_t tokens) const {
    const Tensor& weight = store_[kAttention + name + ".weight"].value;  // [D]
    int64_t width = weight.size(0);
    for (int64_t t = 0; t < tokens; ++t) {
      double square_sum = 0;
      for (int64_t c = 0; c < width; ++c) square_sum += rows[t * width + c] * rows[t * width + c];
      double rstd = 1.0 / std::sqrt(square_sum / width + m_.norm_eps);
      for (int64_t c = 0; c < width; ++c) rows[t * width + c] *= rstd * weight.data<float>()[c];
    }
    return rows;
  }

  // Interleaved pairs (x[2i], x[2i+1]) turned as complex numbers by position * frequency i.
  void rotate(double* pairs, int64_t position) const {
    for (size_t i = 0; i < inverse_frequencies_.size(); ++i) {
      double angle = static_cast<double>(position) * inverse_frequencies_[i];
      double real = pairs[2 * i], imaginary = pairs[2 * i + 1];
      pairs[2 * i] = real * std::cos(angle) - imaginary * std::sin(angle);
      pairs[2 * i + 1] = real * std::sin(angle) + imaginary * std::cos(angle);
    }
  }

  const ModelConfig& m_;
  const ParameterStore& store_;
  std::vector<double> inverse_frequencies_;
  double scale_ = 0;
};

class MlaAttentionTest : public ::testing::Test {
 protected:
  MlaAttentionTest()
      : model_(tiny_model()),
        store_(deepseek_v3_parameters(model_), Device::cpu()),
        rope_cos_(Shape{model_.max_seq_len, model_.qk_rope_head_dim / 2}, DType::f32),
        rope_sin_(Shape{model_.max_seq_len, model_.qk_rope_head_dim / 2}, DType::f32),
        rope_{rope_cos_, rope_sin_},
        attention_(model_, store_, 0, rope_) {
    fill_rope_table(rope_, mla_rope_settings(model_));
    store_.initialize(7, 0.5);
    // Norm weights away from their initial ones, so that their gradients are tested at a general point.
    CounterRng rng(11, 0);
    uint64_t draw = 0;
    for (const char* norm : {"q_a_layernorm.weight", "kv_a_layernorm.weight"}) {
      const Tensor& weight = store_[kAttention + norm].value;
      for (int64_t i = 0; i < weight.numel(); ++i) weight.data<float>()[i] = 1.0f + 0.3f * rng.normal(draw++);
    }
  }

  // [T, hidden] <- x: [T, hidden], sequences of kSeqLen
  OwnedTensor forward(const Tensor& x) const {
    MlaAttention::Context ctx;
    OwnedTensor out(Shape{x.size(0), model_.hidden_size}, DType::f32);
    OwnedTensor positions = positions_of(x.size(0));
    attention_.forward(ctx, out, x, positions, kSeqLen);
    return out;
  }

  // d_x: [T, hidden] of the loss sum(d_out * out); parameter gradients accumulate in the store.
  OwnedTensor backward(const Tensor& x, const Tensor& d_out) const {
    MlaAttention::Context ctx;
    OwnedTensor out(Shape{x.size(0), model_.hidden_size}, DType::f32);
    OwnedTensor positions = positions_of(x.size(0));
    attention_.forward(ctx, out, x, positions, kSeqLen);
    OwnedTensor d_x(x.shape(), DType::f32);
    attention_.backward_input(ctx, d_x, d_out);
    attention_.backward_weight(ctx);
    return d_x;
  }

  ModelConfig model_;
  ParameterStore store_;
  OwnedTensor rope_cos_;
  OwnedTensor rope_sin_;
  RopeTable rope_;
  MlaAttention attention_;
};

TEST_F(MlaAttentionTest, MatchesAPlainReference) {
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 1);
  OwnedTensor out = forward(x);
  std::vector<double> expected = ReferenceMla(model_, store_).forward(x);
  for (int64_t i = 0; i < out.numel(); ++i) EXPECT_NEAR(out.data<float>()[i], expected[i], 1e-5) << "element " << i;
}

// In bf16 the GEMM inputs are rounded to 8 bits of mantissa while norms, RoPE and softmax stay fp32: the output
// stays within bf16 rounding of the fp32 one, and backward runs with the fp32 norm weights.
TEST_F(MlaAttentionTest, Bf16ComputeStaysCloseToFp32) {
  ParameterStore bf16_store(deepseek_v3_parameters(model_), Device::cpu(), DType::bf16);
  copy_tensor(bf16_store.values(), store_.values());
  bf16_store.refresh_compute_copy();
  MlaAttention bf16_attention(model_, bf16_store, 0, rope_);
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 8);
  OwnedTensor expected = forward(x);
  MlaAttention::Context ctx;
  OwnedTensor out(Shape{kTokens, model_.hidden_size}, DType::f32);
  OwnedTensor positions = positions_of(kTokens);
  bf16_attention.forward(ctx, out, x, positions, kSeqLen);
  for (int64_t i = 0; i < out.numel(); ++i) {
    EXPECT_NEAR(out.data<float>()[i], expected.data<float>()[i], 0.05 + 0.02 * std::fabs(expected.data<float>()[i]))
        << "element " << i;
  }
  OwnedTensor d_x(x.shape(), DType::f32);
  bf16_attention.backward_input(ctx, d_x, out);
  bf16_attention.backward_weight(ctx);
  EXPECT_GT(testing::dot(bf16_store.grads(), bf16_store.grads()), 0.0);
}

// The output gradient handed over in output_grad_dtype() (bf16 in bf16 training; the decoder layer's norm writes it
// so) is what backward_input would round d_out to: d_x and every parameter gradient are the bits of passing d_out
// in fp32. fp32 training keeps d_out in fp32.
TEST_F(MlaAttentionTest, TakesTheBf16OutputGradientItsProducerWrote) {
  EXPECT_EQ(MlaAttention(model_, store_, 0, rope_).output_grad_dtype(), DType::f32);
  ParameterStore bf16_store(deepseek_v3_parameters(model_), Device::cpu(), DType::bf16);
  copy_tensor(bf16_store.values(), store_.values());
  bf16_store.refresh_compute_copy();
  MlaAttention bf16_attention(model_, bf16_store, 0, rope_);
  ASSERT_EQ(bf16_attention.output_grad_dtype(), DType::bf16);
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 10);
  OwnedTensor d_out = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 11);
  OwnedTensor positions = positions_of(kTokens);
  auto gradients = [&](bool hand_over_bf16) {  // d_x, then every parameter's gradient
    MlaAttention::Context ctx;
    OwnedTensor out(Shape{kTokens, model_.hidden_size}, DType::f32), d_x(x.shape(), DType::f32);
    bf16_attention.forward(ctx, out, x, positions, kSeqLen);
    bf16_store.zero_grads();
    if (hand_over_bf16) {
      bf16_attention.backward_input(ctx, d_x, to_compute_dtype(d_out, DType::bf16));
    } else {
      bf16_attention.backward_input(ctx, d_x, d_out);
    }
    bf16_attention.backward_weight(ctx);
    std::vector<OwnedTensor> results;
    results.push_back(std::move(d_x));
    results.push_back(host_copy(bf16_store.grads()));
    return results;
  };
  std::vector<OwnedTensor> from_fp32 = gradients(false), handed_over = gradients(true);
  EXPECT_TRUE(testing::same_bytes(handed_over[0], from_fp32[0]));
  EXPECT_TRUE(testing::same_bytes(handed_over[1], from_fp32[1]));
  EXPECT_GT(testing::dot(handed_over[1], handed_over[1]), 0.0);
}

// In fp8 training (FP8 projections computing in bf16) the tensors between the projections and the attention core
// are bf16, as in bf16 training: x, q, k, v and o; d_o alone stays fp32 (the header says why). o is kept once, in
// bf16, until backward_weight quantises it again for o_proj. The output gradients the projections keep for wgrad
// are their FP8 transposes. (tests/model/linear_fp8_test.cc checks the FP8 GEMMs'
// error, tests/apps/trainer_fp8_test.cc the training.)
TEST_F(MlaAttentionTest, Fp8KeepsBf16ActivationsAndGradientsAroundTheProjections) {
  ParameterStore fp8_store(deepseek_v3_parameters(model_), Device::cpu(), DType::bf16, {.enabled = true});
  copy_tensor(fp8_store.values(), store_.values());
  fp8_store.refresh_compute_copy();
  fp8_store.zero_grads();
  MlaAttention fp8_attention(model_, fp8_store, 0, rope_);
  EXPECT_EQ(fp8_attention.input_dtype(), DType::bf16);
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 9);
  MlaAttention::Context ctx;
  OwnedTensor out(Shape{kTokens, model_.hidden_size}, DType::f32);
  OwnedTensor positions = positions_of(kTokens);
  fp8_attention.forward(ctx, out, x, positions, kSeqLen);
  for (const OwnedTensor* kept : {&ctx.q, &ctx.kv, &ctx.k_rope, &ctx.o}) {
    EXPECT_EQ(kept->tensor().dtype(), DType::bf16);
  }
  EXPECT_EQ(ctx.o_input.tensor().raw(), nullptr);  // o kept once: o_proj's FP8 input is quantised again for wgrad
  OwnedTensor d_x(x.shape(), DType::f32);
  fp8_attention.backward_input(ctx, d_x, out);
  EXPECT_EQ(ctx.o.tensor().dtype(), DType::bf16);  // until backward_weight
  for (const Linear::PreparedOutputGrad* kept : {&ctx.d_out, &ctx.d_q, &ctx.d_kv, &ctx.d_ckv, &ctx.d_q_latent}) {
    EXPECT_EQ(kept->saved.tensor().dtype(), DType::u8);  // d_y^T in e4m3 and its scales, for wgrad
    EXPECT_EQ(kept->rows.tensor().raw(), nullptr);       // dgrad's rows: released by backward_input
  }
  fp8_attention.backward_weight(ctx);
  fp8_store.zero_unwritten_grads();
  EXPECT_GT(testing::dot(fp8_store.grads(), fp8_store.grads()), 0.0);
}

TEST_F(MlaAttentionTest, SoftmaxScaleCarriesYarnMscale) {
  // 7^-0.5 * (0.1 ln 4 + 1)^2 with YaRN on; without it the plain 7^-0.5.
  double mscale = 0.1 * std::log(4.0) + 1.0;
  EXPECT_NEAR(attention_softmax_scale(7, mla_rope_settings(model_)), mscale * mscale / std::sqrt(7.0), 1e-12);
  ModelConfig plain = model_;
  plain.rope.yarn.original_max_position = plain.max_seq_len;
  EXPECT_NEAR(attention_softmax_scale(7, mla_rope_settings(plain)), 1.0 / std::sqrt(7.0), 1e-12);
}

TEST_F(MlaAttentionTest, GradientsMatchFiniteDifferences) {
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 2);
  OwnedTensor d_out = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 3);
  store_.zero_grads();
  OwnedTensor d_x = backward(x, d_out);
  auto loss = [&] { return testing::dot(d_out, forward(x)); };
  constexpr double kStep = 2e-3, kAtol = 1e-3, kRtol = 1e-2;
  testing::check_gradient(x, d_x, loss, kStep, kAtol, kRtol);
  for (const char* name :
       {"q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj"}) {
    SCOPED_TRACE(name);
    const Parameter& parameter = store_[kAttention + name + ".weight"];
    testing::check_gradient(parameter.value, parameter.grad, loss, kStep, kAtol, kRtol);
  }
}

TEST_F(MlaAttentionTest, GradientsAccumulate) {
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 4);
  OwnedTensor d_out = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 5);
  store_.zero_grads();
  backward(x, d_out);
  std::vector<float> once(store_.grads().data<float>(), store_.grads().data<float>() + store_.grads().numel());
  backward(x, d_out);
  // NOTE: not bitwise: a second pass adds its per-token terms one by one onto the first pass's sum.
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_NEAR(store_.grads().data<float>()[i], 2.0f * once[i], 1e-5 * std::fabs(once[i])) << "element " << i;
  }
}

TEST_F(MlaAttentionTest, PositionsRestartInEverySequence) {
  OwnedTensor both = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 6);
  OwnedTensor second(Shape{kSeqLen, model_.hidden_size}, DType::f32);
  copy_tensor(second, both.tensor().slice(kSeqLen, kTokens));
  OwnedTensor out_both = forward(both);
  OwnedTensor out_second = forward(second);
  for (int64_t i = 0; i < out_second.numel(); ++i) {
    EXPECT_EQ(out_both.data<float>()[kSeqLen * model_.hidden_size + i], out_second.data<float>()[i]) << i;
  }
}

TEST_F(MlaAttentionTest, LaterTokensDoNotChangeEarlierOnes) {
  constexpr int64_t kChanged = 2;  // position 2 of the first sequence
  OwnedTensor x = testing::random_tensor(Shape{kTokens, model_.hidden_size}, 7);
  OwnedTensor before = forward(x);
  x.data<float>()[kChanged * model_.hidden_size] += 1.0f;
  OwnedTensor after = forward(x);
  for (int64_t t = 0; t < kTokens; ++t) {
    bool may_change = t >= kChanged && t < kSeqLen;
    double difference = 0;
    for (int64_t c = 0; c < model_.hidden_size; ++c) {
      int64_t i = t * model_.hidden_size + c;
      difference += std::fabs(after.data<float>()[i] - before.data<float>()[i]);
    }
    if (may_change) {
      EXPECT_GT(difference, 1e-4) << "token " << t;
    } else {
      EXPECT_EQ(difference, 0.0) << "token " << t;
    }
  }
}

}  // namespace
}  // namespace hai
