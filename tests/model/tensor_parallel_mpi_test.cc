// Tensor parallelism on CPU ranks (fp32) against the model on one rank: every rank of the job is a tp rank (tp = 2
// or 4) holding its share of a tiny model (rank_share.h: heads, FFN columns, vocabulary rows; a vocabulary of 11 that
// neither tp divides), copied from the reference's parameters; every rank also runs the whole model as the
// reference. For ten steps of SGD, each from the reference's parameters: the objective agrees to 1e-6 relative, every
// held box of every gradient (a routed expert's summed over the tp ranks, as its expert-DP group sums it) equals the
// reference's box to 1e-5 relative, and the routed token counts are equal.
// NOTE: not bit for bit: the row-parallel projections (o_proj, down_proj) and the vocabulary-parallel loss add
// partial sums over the tp ranks, another order of fp32 sums than one rank's (measured: 5e-8 relative on the
// objective, up to 3e-6 on a gradient).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/rng.h"
#include "model/deepseek_v3_model.h"
#include "model/parameters.h"
#include "model/rank_share.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/model/model_test_inputs.h"
#include "tests/model/model_training_checks.h"

namespace hai {
namespace {

using testing::relative_distance;
using testing::sgd_step;

// The box [offsets, offsets + box.shape) of the global fp32 tensor `whole` (rank 1 or 2) copied to / from `box`.
void copy_box(const Tensor& whole, const Tensor& box, const std::vector<int64_t>& offsets, bool into_box) {
  int64_t rows = box.rank() == 2 ? box.size(0) : 1, columns = box.rank() == 2 ? box.size(1) : box.size(0);
  int64_t whole_columns = whole.rank() == 2 ? whole.size(1) : whole.size(0);
  int64_t row_offset = box.rank() == 2 ? offsets[0] : 0, column_offset = offsets.back();
  for (int64_t r = 0; r < rows; ++r) {
    float* box_row = box.data<float>() + r * columns;
    float* whole_row = whole.data<float>() + (r + row_offset) * whole_columns + column_offset;
    if (into_box) {
      std::memcpy(box_row, whole_row, static_cast<size_t>(columns) * sizeof(float));
    } else {
      std::memcpy(whole_row, box_row, static_cast<size_t>(columns) * sizeof(float));
    }
  }
}

ModelConfig tensor_parallel_model() {
  ModelConfig model = testing::tiny_test_model(2);
  model.num_heads = 4;
  model.dense_ffn_size = 8;  // the shared expert: expert_ffn_size 4
  return model;
}

ParallelConfig tensor_parallel_layout(int tp) {
  ParallelConfig parallel;
  parallel.tp = tp;
  parallel.dp = 1;
  parallel.micro_batches = 1;
  return parallel;
}

class TensorParallelModelTest : public testing::World {
 protected:
  TensorParallelModelTest()
      : config_(tensor_parallel_model()),
        share_(rank_share(config_, tensor_parallel_layout(size()), {.dp = 0, .pp = 0, .tp = rank()})),
        reference_store_(deepseek_v3_parameters(config_), Device::cpu()),
        tp_store_(share_specs(share_), Device::cpu()),
        reference_(config_, reference_store_),
        model_(config_, tp_store_, nullptr, TensorParallel(world_.get())) {
    reference_store_.initialize(5, 0.3);
    copy_reference_values();
  }

  void copy_reference_values() {
    for (const HeldParameter& held : share_) {
      copy_box(reference_store_[held.spec.name].value, tp_store_[held.spec.name].value, held.box_offsets, true);
    }
  }

  ModelConfig config_;
  std::vector<HeldParameter> share_;
  ParameterStore reference_store_, tp_store_;
  DeepseekV3Model reference_, model_;
};

TEST_F(TensorParallelModelTest, TenStepsGiveTheSingleRankLossesGradientsAndExpertLoad) {
  for (int step = 0; step < 10; ++step) {
    reference_store_.zero_grads();
    tp_store_.zero_grads();
    reference_.reset_expert_load();
    model_.reset_expert_load();
    CounterRng rng(static_cast<uint64_t>(step), 0);
    OwnedTensor tokens = testing::random_tokens(2, 6, config_.vocab_size, rng);  // [2, 7]
    double expected = reference_.train_micro_batch(tokens, 1.0f).objective(config_.mtp_loss_weight);
    double actual = model_.train_micro_batch(tokens, 1.0f).objective(config_.mtp_loss_weight);
    EXPECT_NEAR(actual, expected, 1e-6 * std::abs(expected)) << "step " << step;
    for (const HeldParameter& held : share_) {
      if (!held.spec.trainable) continue;
      const Tensor& grad = tp_store_[held.spec.name].grad;
      // NOTE: every tp rank routes the same tokens: the expert-DP group (here the tp ranks) sums its copies.
      if (held.spec.group == ParameterGroup::expert) world_->all_reduce(grad, ReduceOp::sum);
      OwnedTensor expected_box(grad.shape(), DType::f32);
      copy_box(reference_store_[held.spec.name].grad, expected_box, held.box_offsets, true);
      EXPECT_LE(relative_distance(expected_box, grad), 1e-5) << "step " << step << " " << held.spec.name;
    }
    EXPECT_EQ(std::memcmp(reference_.expert_load().raw(), model_.expert_load().raw(),
                          reference_.expert_load().bytes()),
              0)
        << "step " << step;
    // NOTE: both go on from the same parameters: routing near a tie turns 1e-7 into 1e-2 within a few steps.
    sgd_step(reference_store_, 0.1f);
    copy_reference_values();
  }
}

// The boxes of all tp ranks tile every parameter exactly once (a vocabulary of 11 over tp 4: 3, 3, 3, 2 rows).
TEST_F(TensorParallelModelTest, BoxesTileEveryParameter) {
  for (const HeldParameter& held : share_) {
    OwnedTensor total = zero_tensor(Shape{1}, DType::i32);
    total.tensor().data<int32_t>()[0] = static_cast<int32_t>(held.box_extents.numel());
    world_->all_reduce(total, ReduceOp::sum);
    int64_t expected = held.split_over_tp ? held.spec.shape.numel() : size() * held.spec.shape.numel();
    EXPECT_EQ(total.tensor().data<int32_t>()[0], expected) << held.spec.name;
  }
}

}  // namespace
}  // namespace hai
