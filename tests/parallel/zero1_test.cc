// ZeRO-1 on a group of one rank is the plain optimizer, bit for bit.

#include <gtest/gtest.h>

#include <cstring>

#include "framework/comm/single_rank_communicator.h"
#include "framework/device/grad_norm.h"
#include "framework/optim/adamw.h"
#include "framework/optim/grad_clip.h"
#include "parallel/zero1.h"
#include "tests/parallel/zero1_test_util.h"

namespace hai {
namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

TEST(Zero1, OneRankEqualsAdamW) {
  OptimizerConfig config = testing::zero1_optimizer_config();
  ParameterStore plain_store(testing::zero1_specs(), Device::cpu(), DType::bf16);
  ParameterStore zero1_store(testing::zero1_specs(), Device::cpu(), DType::bf16);
  plain_store.initialize(3, 0.5);
  zero1_store.initialize(3, 0.5);
  SingleRankCommunicator group;
  AdamW plain(plain_store, config);
  Zero1Optimizer zero1(zero1_store, config, group);
  EXPECT_EQ(zero1.shard().numel(), 39);
  EXPECT_EQ(zero1.state_bytes(), plain.state_bytes());
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(plain_store, 0, step);
    testing::fill_rank_grads(zero1_store, 0, step);
    double plain_squared = grad_norm_squared({plain_store.grads()});
    double plain_norm = clip_gradients({plain_store.grads()}, plain_squared, 2.0);
    plain.step(0.01f, step);
    double squared = zero1.reduce_gradients();
    EXPECT_EQ(squared, plain_squared);
    EXPECT_EQ(zero1.clip(squared, 2.0), plain_norm);
    zero1.step(0.01f, step);
  }
  EXPECT_TRUE(same_bytes(plain_store.values(), zero1_store.values()));
  EXPECT_TRUE(same_bytes(plain.exp_avg(), zero1.exp_avg()));
  EXPECT_TRUE(same_bytes(plain.exp_avg_sq(), zero1.exp_avg_sq()));
  EXPECT_EQ(zero1_store["gate.bias"].value.data<float>()[0], 0.0f);  // not trainable: untouched
}

}  // namespace
}  // namespace hai
