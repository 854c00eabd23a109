#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "framework/device/expert_load.h"
#include "framework/tensor/tensor.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

std::vector<int32_t> values_of(const OwnedTensor& load) {
  return {load.data<int32_t>(), load.data<int32_t>() + load.numel()};
}

TEST(ExpertLoad, CountsEveryAssignmentAndAccumulates) {
  OwnedTensor topk(Shape{3, 2}, DType::i32), load(Shape{4}, DType::i32);
  int32_t indices[6] = {0, 2, 2, 3, 3, 2};
  std::copy(indices, indices + 6, topk.data<int32_t>());
  accumulate_expert_load(load, topk);
  EXPECT_EQ(values_of(load), (std::vector<int32_t>{1, 0, 3, 2}));
  accumulate_expert_load(load, topk);  // a second micro-batch adds
  EXPECT_EQ(values_of(load), (std::vector<int32_t>{2, 0, 6, 4}));
}

TEST(ExpertLoad, RejectsExpertOutsideRange) {
  OwnedTensor topk(Shape{1, 1}, DType::i32), load(Shape{4}, DType::i32);
  topk.data<int32_t>()[0] = 4;
  EXPECT_THROW(accumulate_expert_load(load, topk), Error);
}

// Loads [3, 1, 2, 2] have mean 2: the overloaded expert's bias drops, the underloaded one's rises, experts at
// exactly the mean keep theirs.
TEST(RouterBias, MovesTowardsTheMeanLoad) {
  OwnedTensor bias(Shape{4}, DType::f32), load(Shape{4}, DType::i32);
  int32_t loads[4] = {3, 1, 2, 2};
  std::copy(loads, loads + 4, load.data<int32_t>());
  bias.data<float>()[2] = 0.5f;
  update_router_bias(bias, load, 0.001f);
  EXPECT_EQ(bias.data<float>()[0], -0.001f);
  EXPECT_EQ(bias.data<float>()[1], 0.001f);
  EXPECT_EQ(bias.data<float>()[2], 0.5f);
  EXPECT_EQ(bias.data<float>()[3], 0.0f);
}

// The optimizer's update scale gates the update: NaN (a skipped step) leaves the bias, a finite one does not.
TEST(RouterBias, StaysWhenTheUpdateScaleIsNan) {
  OwnedTensor bias(Shape{2}, DType::f32), load(Shape{2}, DType::i32);
  load.data<int32_t>()[0] = 1, load.data<int32_t>()[1] = 2;
  OwnedTensor skipped = testing::tensor_of(Shape{1}, {std::numeric_limits<float>::quiet_NaN()});
  update_router_bias(bias, load, 0.25f, skipped);
  EXPECT_EQ(bias.data<float>()[0], 0.0f);
  EXPECT_EQ(bias.data<float>()[1], 0.0f);
  OwnedTensor clean = testing::tensor_of(Shape{1}, {0.5f});
  update_router_bias(bias, load, 0.25f, clean);
  EXPECT_EQ(bias.data<float>()[0], 0.25f);
  EXPECT_EQ(bias.data<float>()[1], -0.25f);
}

TEST(RouterBias, NonIntegerMeanHasNoTies) {
  OwnedTensor bias(Shape{2}, DType::f32), load(Shape{2}, DType::i32);
  load.data<int32_t>()[0] = 1, load.data<int32_t>()[1] = 2;  // mean 1.5
  update_router_bias(bias, load, 0.25f);
  EXPECT_EQ(bias.data<float>()[0], 0.25f);
  EXPECT_EQ(bias.data<float>()[1], -0.25f);
}

}  // namespace
}  // namespace hai
