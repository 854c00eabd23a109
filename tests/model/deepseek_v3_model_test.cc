// Whole-model gradient check (issue: the DeepSeek-V3 model): in fp32 on a tiny config, the analytic gradient of
// the full objective (main loss + MTP loss + balance loss) is compared with central finite differences for
// sampled elements of every kind of parameter.
//
// The top-k expert selection is piecewise constant. The test makes it constant on purpose: every MoE layer's
// routing bias is +2 on experts 1 and 6 (in groups 0 and 3) and 0 elsewhere. Sigmoid scores lie in (0, 1), so
// those two experts win their groups and the top-k by a margin of at least 1, which no finite-difference step
// can overturn. The routing weights still depend on the gate through the scores, so the gate's gradient is
// checked; the unselected experts must get exactly zero gradient.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "framework/core/rng.h"
#include "model/deepseek_v3_model.h"
#include "model/gradient_buckets.h"
#include "model/parameters.h"
#include "tests/framework/device/test_util.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

class ModelGradient : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<ParameterStore>(deepseek_v3_parameters(config_), Device::cpu());
    store_->initialize(5, 0.3);
    for (int64_t layer : {int64_t{1}, int64_t{2}}) {  // the MoE layer and the MTP block
      float* bias = (*store_)[layer_prefix(layer) + "mlp.gate.e_score_correction_bias"].value.data<float>();
      bias[1] = 2.0f;
      bias[6] = 2.0f;
    }
    model_ = std::make_unique<DeepseekV3Model>(config_, *store_);
  }

  double objective() { return model_->evaluate(tokens_).objective(config_.mtp_loss_weight); }

  ModelConfig config_ = testing::tiny_test_model(2);
  OwnedTensor tokens_ = testing::random_tokens(2, 6, 11, CounterRng(3, 99));
  std::unique_ptr<ParameterStore> store_;
  std::unique_ptr<DeepseekV3Model> model_;
};

TEST_F(ModelGradient, EveryParameterKindMatchesFiniteDifferences) {
  store_->zero_grads();
  MicroBatchLosses losses = model_->train_micro_batch(tokens_, 1.0f);
  EXPECT_NEAR(losses.objective(config_.mtp_loss_weight), objective(), 1e-6);
  EXPECT_GT(losses.balance, 0.0);
  EXPECT_EQ(losses.mtp.size(), 1u);
  EXPECT_EQ(losses.mtp[0].tokens, 2 * 5);  // the last position of each sequence has no MTP target

  const char* checked[] = {
      "model.embed_tokens.weight",
      "model.layers.0.input_layernorm.weight",
      "model.layers.0.self_attn.q_a_proj.weight",
      "model.layers.0.self_attn.q_a_layernorm.weight",
      "model.layers.0.self_attn.q_b_proj.weight",
      "model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
      "model.layers.0.self_attn.kv_a_layernorm.weight",
      "model.layers.0.self_attn.kv_b_proj.weight",
      "model.layers.0.self_attn.o_proj.weight",
      "model.layers.0.post_attention_layernorm.weight",
      "model.layers.0.mlp.gate_proj.weight",
      "model.layers.0.mlp.down_proj.weight",
      "model.layers.1.mlp.gate.weight",
      "model.layers.1.mlp.shared_experts.up_proj.weight",
      "model.layers.1.mlp.experts.1.gate_proj.weight",
      "model.layers.1.mlp.experts.6.down_proj.weight",
      "model.norm.weight",
      "lm_head.weight",
      "model.layers.2.enorm.weight",
      "model.layers.2.hnorm.weight",
      "model.layers.2.eh_proj.weight",
      "model.layers.2.self_attn.kv_b_proj.weight",
      "model.layers.2.mlp.gate.weight",
      "model.layers.2.mlp.experts.6.up_proj.weight",
      "model.layers.2.shared_head.norm.weight",
  };
  for (const char* name : checked) {
    SCOPED_TRACE(name);
    const Parameter& parameter = (*store_)[name];
    std::vector<int64_t> samples;
    for (int64_t sample = 0; sample < 4; ++sample) samples.push_back((sample * 7919 + 13) % parameter.value.numel());
    testing::check_gradient(parameter.value, parameter.grad, [&] { return objective(); }, 1e-2, 3e-5, 5e-3,
                            samples);
  }
  // Experts that no token chose get no gradient.
  const Parameter& unused = (*store_)["model.layers.1.mlp.experts.3.up_proj.weight"];
  for (int64_t i = 0; i < unused.grad.numel(); ++i) ASSERT_EQ(unused.grad.data<float>()[i], 0.0f);
}

TEST_F(ModelGradient, ExpertLoadAndBiasUpdate) {
  model_->reset_expert_load();
  model_->train_micro_batch(tokens_, 1.0f);
  Tensor load = model_->expert_load();  // [2 MoE layers, 8]
  ASSERT_EQ(load.shape(), (Shape{2, 8}));
  EXPECT_EQ(load.data<int32_t>()[1], 12);  // 12 tokens, each to experts 1 and 6
  EXPECT_EQ(load.data<int32_t>()[6], 12);
  EXPECT_EQ(load.data<int32_t>()[0], 0);
  model_->evaluate(tokens_);
  EXPECT_EQ(load.data<int32_t>()[1], 12);  // evaluation does not count
  model_->update_router_biases(0.001f);
  const float* bias = (*store_)["model.layers.1.mlp.gate.e_score_correction_bias"].value.data<float>();
  EXPECT_FLOAT_EQ(bias[1], 2.0f - 0.001f);  // overloaded: pushed down
  EXPECT_FLOAT_EQ(bias[0], 0.001f);         // idle: pulled up
  EXPECT_EQ(model_->moe_layer_indices(), (std::vector<int64_t>{1, 2}));
}

// Each gradient bucket the backward announces is final: the gradients of its parameters when announced are
// bitwise those at the end. Every bucket is announced once: the head first, then the MTP block (layer 2), the
// decoder layers from the last (each as soon as its input and weight gradients are done), the embedding last. None
// is left to the end.
TEST_F(ModelGradient, AnnouncedGradientBucketsAreFinal) {
  store_->zero_grads();
  model_->train_micro_batch(tokens_, 1.0f);  // a first micro-batch: the second's announcements follow accumulation
  std::vector<int> announced;
  std::vector<std::pair<const Parameter*, OwnedTensor>> snapshots;  // each announced parameter's gradient then
  GradientsFinal on_final = [&](int bucket) {
    announced.push_back(bucket);
    for (const Parameter& parameter : store_->parameters()) {
      if (parameter.spec.trainable && gradient_bucket(parameter.spec.name) == bucket) {
        snapshots.emplace_back(&parameter, OwnedTensor(parameter.grad.shape(), DType::f32));
        copy_tensor(snapshots.back().second, parameter.grad);
      }
    }
  };
  OwnedTensor loss_sums(Shape{loss_slots(config_.mtp_depth)}, DType::f32);
  model_->train_micro_batch(tokens_, 1.0f, loss_sums, on_final);
  EXPECT_EQ(announced, (std::vector<int>{kHeadBucket, layer_bucket(2), layer_bucket(1), layer_bucket(0),
                                          kEmbeddingBucket}));
  int64_t trainable = 0;
  for (const Parameter& parameter : store_->parameters()) {
    if (!parameter.spec.trainable) continue;
    ++trainable;
    EXPECT_NE(gradient_bucket(parameter.spec.name), kGradientsFinalAtEnd) << parameter.spec.name;
  }
  ASSERT_EQ(static_cast<int64_t>(snapshots.size()), trainable);
  for (const auto& [parameter, snapshot] : snapshots) {
    EXPECT_TRUE(testing::same_bytes(snapshot, parameter->grad)) << parameter->spec.name << " changed after its announcement";
  }
}

// The step's gradients are written, not added to a zero-filled buffer (framework/params/parameter_store.h): a step
// on a gradient buffer full of NaN gives bitwise the gradients of a step on a zero-filled one, with one micro-batch
// and with two (the second adds to the first), the experts that no token chose included (zeros).
TEST_F(ModelGradient, StepGradientsDoNotDependOnTheBufferBeforeTheStep) {
  OwnedTensor second_tokens = testing::random_tokens(2, 6, 11, CounterRng(4, 99));
  for (int micro_batches : {1, 2}) {
    SCOPED_TRACE(micro_batches);
    auto step_gradients = [&](float fill) {
      std::fill_n(store_->grads().data<float>(), store_->grads().numel(), fill);
      store_->zero_grads();
      model_->train_micro_batch(tokens_, 0.5f);
      if (micro_batches == 2) model_->train_micro_batch(second_tokens, 0.5f);
      store_->zero_unwritten_grads();
      OwnedTensor grads(store_->grads().shape(), DType::f32);  // [N_trainable]
      copy_tensor(grads, store_->grads());
      return grads;
    };
    OwnedTensor from_zeros = step_gradients(0.0f);
    OwnedTensor from_nan = step_gradients(std::nanf(""));
    EXPECT_TRUE(testing::same_bytes(from_zeros, from_nan));
    const Parameter& unused = (*store_)["model.layers.1.mlp.experts.3.up_proj.weight"];
    for (int64_t i = 0; i < unused.grad.numel(); ++i) ASSERT_EQ(unused.grad.data<float>()[i], 0.0f);
    for (int64_t i = 0; i < from_nan.numel(); ++i) ASSERT_TRUE(std::isfinite(from_nan.data<float>()[i])) << i;
  }
}

// Every forward pass tells each bucket before it reads the bucket's weights: with every value NaN and each
// bucket's values put back only when told, the losses are bitwise a clean pass's. Order: the embedding's, the
// decoder layers', the head's, the MTP block's (layer 2).
TEST_F(ModelGradient, TheForwardTellsEachBucketBeforeReadingIt) {
  double clean = objective();
  OwnedTensor saved(store_->values().shape(), DType::f32);  // [N]
  copy_tensor(saved, store_->values());
  std::fill_n(store_->values().data<float>(), store_->numel(), std::nanf(""));
  std::vector<int> told;
  model_->set_parameters_needed([&](int bucket) {
    told.push_back(bucket);
    for (const Parameter& parameter : store_->parameters()) {
      if (gradient_bucket(parameter.spec.name) != bucket) continue;
      int64_t begin = parameter.offset, end = begin + parameter.spec.shape.numel();
      copy_tensor(parameter.value.reshape(Shape{end - begin}), saved.tensor().slice(begin, end));
    }
  });
  EXPECT_EQ(objective(), clean);
  EXPECT_EQ(told, (std::vector<int>{kEmbeddingBucket, layer_bucket(0), layer_bucket(1), kHeadBucket,
                                    layer_bucket(2)}));
  model_->set_parameters_needed(nullptr);
}

}  // namespace
}  // namespace hai
