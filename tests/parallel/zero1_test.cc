// ZeRO-1 on a group of one rank is the plain optimizer, bit for bit: the dense partition [0, 19) and the expert
// partition [19, 39) of the gradient layout together hold the plain optimizer's moments.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
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
  ASSERT_EQ(zero1.partitions().size(), 2u);
  EXPECT_EQ(zero1.partitions()[0].layout_begin(), 0);
  EXPECT_EQ(zero1.partitions()[0].shard().numel(), 19);
  EXPECT_EQ(zero1.partitions()[1].layout_begin(), 19);
  EXPECT_EQ(zero1.partitions()[1].shard().numel(), 20);
  EXPECT_EQ(zero1.owned_elements(), 39);
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
  for (const Zero1Partition& partition : zero1.partitions()) {
    int64_t begin = partition.owned_begin(), end = partition.owned_end();
    EXPECT_TRUE(same_bytes(plain.exp_avg().slice(begin, end), partition.exp_avg()));
    EXPECT_TRUE(same_bytes(plain.exp_avg_sq().slice(begin, end), partition.exp_avg_sq()));
  }
  EXPECT_EQ(zero1_store["gate.bias"].value.data<float>()[0], 0.0f);  // not trainable: untouched
}

TEST(Zero1, DenseBeforeExpertKeepsTheOrderWithinEachGroup) {
  std::vector<ParameterSpec> specs = dense_before_expert({
      {"a", Shape{1}, ParameterGroup::expert},
      {"b", Shape{1}, ParameterGroup::dense},
      {"c", Shape{1}, ParameterGroup::expert},
      {"d", Shape{1}, ParameterGroup::dense},
  });
  std::vector<std::string> names;
  for (const ParameterSpec& spec : specs) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "d", "a", "c"}));
}

TEST(Zero1, RefusesExpertGradientsBeforeDenseOnes) {
  ParameterStore store({{"experts.0.weight", Shape{2}, ParameterGroup::expert}, {"w", Shape{2}}}, Device::cpu());
  SingleRankCommunicator group;
  EXPECT_THROW((Zero1Optimizer{store, testing::zero1_optimizer_config(), group}), Error);
}

}  // namespace
}  // namespace hai
