// ZeRO-1 over the ranks of the job: the result is AdamW on the mean of the ranks' gradients (computed here on
// one rank from the same gradients), every rank ends with the same values, and each holds only its shard's moments.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "framework/comm/single_rank_communicator.h"
#include "framework/device/elementwise.h"
#include "framework/device/grad_norm.h"
#include "parallel/zero1.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/parallel/zero1_test_util.h"

namespace hai {
namespace {

using Zero1World = testing::World;

// The mean over ranks of fill_rank_grads(rank, step), into the store's gradients.
void fill_mean_grads(ParameterStore& store, int ranks, int64_t step) {
  ParameterStore scratch(testing::zero1_specs(), Device::cpu());
  store.zero_grads();
  for (int rank = 0; rank < ranks; ++rank) {
    testing::fill_rank_grads(scratch, rank, step);
    add_scaled(store.grads(), scratch.grads(), 1.0f / static_cast<float>(ranks));
  }
}

void expect_close(const Tensor& expected, const Tensor& actual, double tolerance) {
  ASSERT_EQ(expected.numel(), actual.numel());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    float want = expected.data<float>()[i], got = actual.data<float>()[i];
    EXPECT_NEAR(got, want, tolerance * (1.0 + std::abs(want))) << "element " << i;
  }
}

TEST_F(Zero1World, EqualsOneRankOnTheMeanGradient) {
  OptimizerConfig config = testing::zero1_optimizer_config();
  ParameterStore store(testing::zero1_specs(), Device::cpu());
  ParameterStore reference_store(testing::zero1_specs(), Device::cpu());
  store.initialize(5, 0.5);
  reference_store.initialize(5, 0.5);
  SingleRankCommunicator one_rank;
  Zero1Optimizer zero1(store, config, *world_);
  Zero1Optimizer reference(reference_store, config, one_rank);
  FlatShard shard = zero1.shard();
  EXPECT_EQ(shard.chunk, (39 + size() - 1) / size());
  EXPECT_EQ(zero1.exp_avg().numel(), shard.numel());  // the shard's moments only
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    fill_mean_grads(reference_store, size(), step);
    double squared = zero1.reduce_gradients();
    double reference_squared = reference.reduce_gradients();
    EXPECT_NEAR(squared, reference_squared, 1e-6 * reference_squared);
    expect_close(reference.shard_grads().slice(shard.begin, shard.end), zero1.shard_grads(), 1e-6);
    zero1.clip(squared, 1.5);
    reference.clip(reference_squared, 1.5);
    zero1.step(0.05f, step);
    reference.step(0.05f, step);
  }
  expect_close(reference_store.values(), store.values(), 1e-5);
  expect_close(reference.exp_avg().slice(shard.begin, shard.end), zero1.exp_avg(), 1e-5);

  // Every rank holds bitwise the same values: the element-wise max and min over ranks equal its own.
  OwnedTensor highest(store.values().shape(), DType::f32), lowest(store.values().shape(), DType::f32);
  copy_tensor(highest, store.values());
  copy_tensor(lowest, store.values());
  world_->all_reduce(highest, ReduceOp::max);
  world_->all_reduce(lowest, ReduceOp::min);
  for (int64_t i = 0; i < store.values().numel(); ++i) {
    ASSERT_EQ(highest.tensor().data<float>()[i], store.values().data<float>()[i]) << i;
    ASSERT_EQ(lowest.tensor().data<float>()[i], store.values().data<float>()[i]) << i;
  }
}

TEST_F(Zero1World, NormIsTheSameOnEveryRank) {
  ParameterStore store(testing::zero1_specs(), Device::cpu());
  Zero1Optimizer zero1(store, testing::zero1_optimizer_config(), *world_);
  testing::fill_rank_grads(store, rank(), 9);
  double squared = zero1.reduce_gradients();
  OwnedTensor bits(Shape{1}, DType::i64);
  std::memcpy(bits.tensor().raw(), &squared, sizeof squared);
  OwnedTensor highest(Shape{1}, DType::i64);
  copy_tensor(highest, bits);
  world_->all_reduce(highest, ReduceOp::max);
  world_->all_reduce(bits, ReduceOp::min);
  EXPECT_EQ(highest.tensor().data<int64_t>()[0], bits.tensor().data<int64_t>()[0]);
}

}  // namespace
}  // namespace hai
