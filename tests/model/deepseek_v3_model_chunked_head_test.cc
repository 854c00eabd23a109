// The whole model with its heads (main and MTP) in chunks of 5 of the micro-batch's 12 tokens (the last chunk
// short) against the same model in one chunk, in fp32: the same losses and gradients. Chunking changes no row's
// arithmetic, so every gradient but lm_head's is bitwise equal; lm_head's and the loss sums add the chunks' partial
// sums one after another (1e-6 of the largest magnitude). The finite-difference check of the model
// (deepseek_v3_model_test.cc) covers the one-chunk head.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "model/deepseek_v3_model.h"
#include "model/parameters.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

struct ModelRun {
  std::unique_ptr<ParameterStore> store;
  MicroBatchLosses trained;
  MicroBatchLosses evaluated;
};

ModelRun run_model(int64_t head_chunk_tokens, const Tensor& tokens) {
  ModelConfig config = testing::tiny_test_model(2);
  config.head_chunk_tokens = head_chunk_tokens;
  ModelRun run;
  run.store = std::make_unique<ParameterStore>(deepseek_v3_parameters(config), Device::cpu());
  run.store->initialize(5, 0.3);
  run.store->zero_grads();
  DeepseekV3Model model(config, *run.store);
  run.trained = model.train_micro_batch(tokens, 2.0f);
  run.store->zero_unwritten_grads();
  run.evaluated = model.evaluate(tokens);
  return run;
}

void expect_close(double actual, double expected) { EXPECT_NEAR(actual, expected, 1e-6 * std::fabs(expected)); }

void expect_same_losses(const MicroBatchLosses& actual, const MicroBatchLosses& expected) {
  expect_close(actual.lm.sum, expected.lm.sum);
  EXPECT_EQ(actual.lm.tokens, expected.lm.tokens);
  ASSERT_EQ(actual.mtp.size(), expected.mtp.size());
  for (size_t depth = 0; depth < expected.mtp.size(); ++depth) {
    expect_close(actual.mtp[depth].sum, expected.mtp[depth].sum);
    EXPECT_EQ(actual.mtp[depth].tokens, expected.mtp[depth].tokens);
  }
  EXPECT_EQ(actual.balance, expected.balance);
}

TEST(ChunkedHeadModel, ChunksOfFiveOfTwelveTokensEqualOneChunk) {
  OwnedTensor tokens = testing::random_tokens(2, 6, 11, CounterRng(3, 99));  // [2, 7]: 12 tokens
  ModelRun whole = run_model(12, tokens);
  ModelRun chunked = run_model(5, tokens);
  expect_same_losses(chunked.trained, whole.trained);
  expect_same_losses(chunked.evaluated, whole.evaluated);
  EXPECT_EQ(chunked.evaluated.lm.sum, chunked.trained.lm.sum);  // evaluation sums the same chunks

  for (const Parameter& parameter : chunked.store->parameters()) {
    if (!parameter.spec.trainable) continue;
    const std::string& name = parameter.spec.name;
    SCOPED_TRACE(name);
    const Tensor& expected = (*whole.store)[name].grad;
    const Tensor& actual = parameter.grad;
    float largest = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::fabs(expected.data<float>()[i]));
    double tolerance = name == "lm_head.weight" ? 1e-6 * largest : 0.0;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      ASSERT_NEAR(actual.data<float>()[i], expected.data<float>()[i], tolerance) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace hai
