// Activation recomputation (train.recompute, docs/design/recompute.md) changes no bit: the tiny model (a dense layer,
// two MoE layers, an MTP block) trains two micro-batches a step under selective and under full recomputation with
// the losses, every gradient and the routed-token counts of the same model without recomputation, bit for bit, in
// fp32, bf16 and fp8 (emulated on the CPU), with the routing bias moved between steps.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/core/rng.h"
#include "model/deepseek_v3_model.h"
#include "model/parameters.h"
#include "tests/model/recompute_cases.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

using testing::same_bits;

struct Trained {
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<DeepseekV3Model> model;
};

Trained make_run(const ModelConfig& config, PrecisionMode precision, RecomputeMode recompute) {
  Trained run;
  run.store = testing::precision_store(deepseek_v3_parameters(config), precision);
  run.model = std::make_unique<DeepseekV3Model>(config, *run.store);
  run.model->set_recompute(recompute);
  return run;
}

// Three steps of two micro-batches; returns each micro-batch's host loss sums. The routing bias moves after each
// step as the trainer moves it.
std::vector<OwnedTensor> train(Trained& run, const ModelConfig& config) {
  std::vector<OwnedTensor> losses;
  for (int step = 0; step < 3; ++step) {
    run.store->zero_grads();
    run.model->reset_expert_load();
    for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
      OwnedTensor tokens = testing::random_tokens(2, 6, config.vocab_size,
                                                  CounterRng(static_cast<uint64_t>(step), micro_batch));  // [2, 7]
      OwnedTensor sums(Shape{loss_slots(config.mtp_depth)}, DType::f32);
      run.model->train_micro_batch(tokens, 0.5f, sums);
      losses.push_back(std::move(sums));
    }
    if (step < 2) run.model->update_router_biases(0.01f);
  }
  run.store->zero_unwritten_grads();
  return losses;
}

class Recompute : public ::testing::TestWithParam<testing::RecomputeCase> {};

TEST_P(Recompute, LossesGradientsAndLoadAreTheBitsOfNone) {
  ModelConfig config = testing::tiny_test_model(3);
  Trained reference = make_run(config, GetParam().precision, RecomputeMode::none);
  Trained recomputed = make_run(config, GetParam().precision, GetParam().recompute);
  std::vector<OwnedTensor> expected = train(reference, config);
  std::vector<OwnedTensor> actual = train(recomputed, config);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(same_bits(expected[i], actual[i])) << "micro-batch " << i;
  for (size_t i = 0; i < reference.store->parameters().size(); ++i) {
    const Parameter& parameter = reference.store->parameters()[i];
    EXPECT_TRUE(same_bits(parameter.grad, recomputed.store->parameters()[i].grad)) << parameter.spec.name;
    EXPECT_TRUE(same_bits(parameter.value, recomputed.store->parameters()[i].value)) << parameter.spec.name;
  }
  EXPECT_TRUE(same_bits(reference.model->expert_load(), recomputed.model->expert_load()));
}

INSTANTIATE_TEST_SUITE_P(Modes, Recompute, testing::recompute_cases(), testing::recompute_case_name);

}  // namespace
}  // namespace hai
