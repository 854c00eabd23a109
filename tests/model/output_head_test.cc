// The chunked output head (model/output_head.h): the chunk size chosen by memory, the loss gradient factor, and
// a head of 7 tokens in chunks of 3 (the last one short) against the same head in one chunk and against finite
// differences, in fp32.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "framework/device/cross_entropy.h"
#include "model/output_head.h"
#include "model/parameters.h"
#include "tests/framework/device/test_util.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

TEST(HeadChunkTokens, AutoKeepsOneChunksLogitsWithin256MiB) {
  ModelConfig model;
  model.vocab_size = 32768;  // bench_moe_1p7b: 2048 x 32768 x 4 bytes = 256 MiB
  EXPECT_EQ(head_chunk_tokens(model), 2048);
  model.vocab_size = 129280;  // DeepSeek-V3: 519 fit, rounded down to 512
  EXPECT_EQ(head_chunk_tokens(model), 512);
  model.vocab_size = 1 << 20;  // 64 fit: not rounded
  EXPECT_EQ(head_chunk_tokens(model), 64);
  model.vocab_size = int64_t{1} << 27;  // not even one row fits: one row anyway
  EXPECT_EQ(head_chunk_tokens(model), 1);
  model.head_chunk_tokens = 5;
  EXPECT_EQ(head_chunk_tokens(model), 5);
}

TEST(TokenLossGrad, IsScaleTimesWeightOverCountedTokens) {
  EXPECT_EQ(token_loss_grad(1.0f, 1.0, 12), 1.0f / 12.0f);
  EXPECT_EQ(token_loss_grad(4.0f, 0.3, 5), 4.0f * 0.3f / 5.0f);
  EXPECT_EQ(token_loss_grad(4.0f, 0.3, 0), 0.0f);
}

// One head run: the loss sum and every gradient it produced.
struct HeadRun {
  float loss_sum = 0;
  OwnedTensor d_h;          // [T, H]
  OwnedTensor norm_grad;    // [H]
  OwnedTensor weight_grad;  // [V, H]
};

class ChunkedHead : public ::testing::Test {
 protected:
  static constexpr int64_t kTokens = 7;
  static constexpr float kLossGrad = 0.37f;

  ChunkedHead() : store_(deepseek_v3_parameters(config_), Device::cpu()) { store_.initialize(5, 0.3); }

  std::unique_ptr<OutputHead> head(int64_t chunk_tokens) const {
    ModelConfig model = config_;
    model.head_chunk_tokens = chunk_tokens;
    return std::make_unique<OutputHead>(model, store_, "model.norm.weight");
  }

  HeadRun run(const OutputHead& head) {
    store_.zero_grads();
    OwnedTensor loss_sum(Shape{1}, DType::f32);
    OutputHead::Context ctx;
    head.forward(ctx, h_, targets_, loss_sum, kLossGrad);
    OwnedTensor d_h(h_.shape(), DType::f32);  // [T, H]
    head.backward_input(ctx, d_h);
    return {.loss_sum = loss_sum.data<float>()[0],
            .d_h = std::move(d_h),
            .norm_grad = copy_of(store_["model.norm.weight"].grad),
            .weight_grad = copy_of(store_["lm_head.weight"].grad)};
  }

  // loss_grad x the loss sum, evaluated without gradients.
  double objective(const OutputHead& head) {
    OwnedTensor loss_sum(Shape{1}, DType::f32);
    OutputHead::Context ctx;
    head.forward(ctx, h_, targets_, loss_sum, std::nullopt);
    return kLossGrad * static_cast<double>(loss_sum.data<float>()[0]);
  }

  static OwnedTensor copy_of(const Tensor& tensor) {
    OwnedTensor copy(tensor.shape(), tensor.dtype());
    copy_tensor(copy, tensor);
    return copy;
  }

  ModelConfig config_ = testing::tiny_test_model(2);
  ParameterStore store_;
  OwnedTensor h_ = testing::random_tensor(Shape{kTokens, 8}, 21);               // [T, H]
  OwnedTensor targets_ = testing::indices_of({3, 0, kIgnoreTarget, 10, 7, 7, 1});  // [T]
};

void expect_bitwise_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    ASSERT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << "element " << i;
  }
}

// |actual - expected| <= 1e-6 x the largest |expected| for every element.
void expect_close(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.shape(), expected.shape());
  float largest = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::fabs(expected.data<float>()[i]));
  ASSERT_GT(largest, 0.0f);
  for (int64_t i = 0; i < actual.numel(); ++i) {
    EXPECT_NEAR(actual.data<float>()[i], expected.data<float>()[i], 1e-6 * largest) << "element " << i;
  }
}

TEST_F(ChunkedHead, ChunksOfThreeEqualOneChunk) {
  HeadRun whole = run(*head(kTokens));
  HeadRun chunked = run(*head(3));
  EXPECT_NEAR(chunked.loss_sum, whole.loss_sum, 1e-6 * std::fabs(whole.loss_sum));
  // Every row's arithmetic is unchanged: the input gradient and the norm weight's (a sum over rows of the same
  // values in the same order) are bitwise equal; lm_head's adds the chunks' sums one after another.
  expect_bitwise_equal(chunked.d_h, whole.d_h);
  expect_bitwise_equal(chunked.norm_grad, whole.norm_grad);
  expect_close(chunked.weight_grad, whole.weight_grad);
  // The automatic chunk holds all 7 tokens here: the same operations as one chunk.
  HeadRun automatic = run(*head(0));
  EXPECT_EQ(automatic.loss_sum, whole.loss_sum);
  expect_bitwise_equal(automatic.weight_grad, whole.weight_grad);
}

TEST_F(ChunkedHead, ChunkedGradientsMatchFiniteDifferences) {
  std::unique_ptr<OutputHead> chunked = head(3);
  HeadRun analytic = run(*chunked);
  auto loss = [&] { return objective(*chunked); };
  testing::check_gradient(h_, analytic.d_h, loss, 1e-2, 2e-5, 5e-3);
  testing::check_gradient(store_["lm_head.weight"].value, analytic.weight_grad, loss, 1e-2, 2e-5, 5e-3,
                          {0, 9, 30, 47, 60, 87});
  testing::check_gradient(store_["model.norm.weight"].value, analytic.norm_grad, loss, 1e-2, 2e-5, 5e-3);
}

TEST_F(ChunkedHead, EvaluationKeepsOnlyTheNormedInputAndGivesTheTrainingLoss) {
  std::unique_ptr<OutputHead> chunked = head(3);
  float training_loss = run(*chunked).loss_sum;
  store_.zero_grads();
  OwnedTensor loss_sum(Shape{1}, DType::f32);
  OutputHead::Context ctx;
  chunked->forward(ctx, h_, targets_, loss_sum, std::nullopt);
  EXPECT_EQ(loss_sum.data<float>()[0], training_loss);
  EXPECT_EQ(ctx.normed.tensor().shape(), h_.shape());
  EXPECT_FALSE(ctx.input.tensor().defined());
  EXPECT_FALSE(ctx.rstd.tensor().defined());
  EXPECT_FALSE(ctx.d_normed.tensor().defined());
  store_.zero_unwritten_grads();  // the evaluation wrote no gradient: the head's is zero-filled here
  const Tensor& weight_grad = store_["lm_head.weight"].grad;
  for (int64_t i = 0; i < weight_grad.numel(); ++i) ASSERT_EQ(weight_grad.data<float>()[i], 0.0f);
}

}  // namespace
}  // namespace hai
