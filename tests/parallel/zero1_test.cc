// ZeRO-1 on a group of one rank is the plain optimizer, bit for bit: the dense partition [0, 19) and the expert
// partition [19, 39) of the gradient layout together hold the plain optimizer's moments.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
#include "framework/device/elementwise.h"
#include "framework/device/grad_norm.h"
#include "framework/optim/adamw.h"
#include "framework/device/grad_clip.h"
#include "parallel/zero1.h"
#include "tests/parallel/zero1_test_util.h"

namespace hai {
namespace {

using testing::same_bytes;

// The test specs with an FP8 copy of w.weight.
std::vector<ParameterSpec> fp8_specs() {
  std::vector<ParameterSpec> specs = testing::optimizer_test_specs();
  specs[0].fp8_gemm = true;
  return specs;
}

// The same values, compute copy and FP8 copies (values and scales, as stored and transposed), byte for byte.
void expect_same_parameters(const ParameterStore& expected, const ParameterStore& actual) {
  EXPECT_TRUE(same_bytes(expected.values(), actual.values()));
  EXPECT_TRUE(same_bytes(expected.compute_values(), actual.compute_values()));
  for (const Parameter& parameter : expected.parameters()) {
    if (!parameter.fp8.defined()) continue;
    const Fp8Weight& fp8 = actual[parameter.spec.name].fp8;
    EXPECT_TRUE(same_bytes(parameter.fp8.values, fp8.values)) << parameter.spec.name;
    EXPECT_TRUE(same_bytes(parameter.fp8.scales, fp8.scales)) << parameter.spec.name;
    EXPECT_TRUE(same_bytes(parameter.fp8.transposed_values, fp8.transposed_values)) << parameter.spec.name;
    EXPECT_TRUE(same_bytes(parameter.fp8.transposed_scales, fp8.transposed_scales)) << parameter.spec.name;
  }
}

TEST(Zero1, OneRankEqualsAdamW) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore plain_store(fp8_specs(), Device::cpu(), DType::bf16, {.enabled = true});
  ParameterStore zero1_store(fp8_specs(), Device::cpu(), DType::bf16, {.enabled = true});
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
    double plain_norm = std::sqrt(grad_norm_squared({plain_store.grads()}));
    scale_tensor(plain_store.grads(), static_cast<float>(clip_factor(plain_norm, 2.0)));
    plain.step(0.01f, step);
    zero1.reduce_gradients({.max_norm = 2.0});
    EXPECT_EQ(zero1.grad_norm(), plain_norm);
    EXPECT_EQ(zero1.update_scale().data<float>()[0], static_cast<float>(clip_factor(plain_norm, 2.0)));
    zero1.step(0.01f, step);
  }
  // The fused step wrote the bf16 copy the plain optimizer's refresh rounds; the FP8 copy was refreshed.
  expect_same_parameters(plain_store, zero1_store);
  for (const Zero1Partition& partition : zero1.partitions()) {
    int64_t begin = partition.owned_begin(), end = partition.owned_end();
    EXPECT_TRUE(same_bytes(plain.exp_avg().slice(begin, end), partition.exp_avg()));
    EXPECT_TRUE(same_bytes(plain.exp_avg_sq().slice(begin, end), partition.exp_avg_sq()));
  }
  EXPECT_EQ(zero1_store["gate.bias"].value.data<float>()[0], 0.0f);  // not trainable: untouched
}

// Three steps of the plain optimizer and of ZeRO-1 on one rank, over stores of `specs` in bf16 with FP8 copies,
// with the same clipped gradients; then the stores hold the same values, compute copies and FP8 copies.
void expect_one_rank_equals_adamw(const std::vector<ParameterSpec>& specs) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore plain_store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  ParameterStore zero1_store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  plain_store.initialize(3, 0.5);
  zero1_store.initialize(3, 0.5);
  SingleRankCommunicator group;
  AdamW plain(plain_store, config);
  Zero1Optimizer zero1(zero1_store, config, group);
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(plain_store, 0, step);
    testing::fill_rank_grads(zero1_store, 0, step);
    double plain_norm = std::sqrt(grad_norm_squared({plain_store.grads()}));
    scale_tensor(plain_store.grads(), static_cast<float>(clip_factor(plain_norm, 2.0)));
    plain.step(0.01f, step);
    zero1.reduce_gradients({.max_norm = 2.0});
    zero1.step(0.01f, step);
  }
  expect_same_parameters(plain_store, zero1_store);
}

// FP8-only experts (the routed experts under precision.mode fp8) have no compute copy: the fused step writes the
// others' bf16 copy as the plain optimizer's refresh rounds it, and both quantise the same FP8 copies.
TEST(Zero1, OneRankEqualsAdamWWithFp8OnlyExperts) {
  std::vector<ParameterSpec> specs = fp8_specs();
  for (ParameterSpec& spec : specs) {
    if (spec.group == ParameterGroup::expert) spec.fp8_gemm = spec.fp8_only = true;
  }
  ASSERT_EQ(ParameterStore(specs, Device::cpu(), DType::bf16, {.enabled = true}).compute_values().numel(),
            total_numel(specs) - 20);  // the two experts [2, 5]
  expect_one_rank_equals_adamw(specs);
}

// An FP8-only dense weight (the dense projections under precision.mode fp8) leaves a hole in the dense partition's
// compute copy: the unsharded step cannot write it as it goes and refreshes the others' after the step, to the same
// bits as the plain optimizer's refresh.
TEST(Zero1, OneRankEqualsAdamWWithAnFp8OnlyDenseWeight) {
  std::vector<ParameterSpec> specs = fp8_specs();
  specs[0].fp8_only = true;  // w.weight [3, 4], the first dense parameter
  ParameterStore store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  ASSERT_EQ(store.compute_values().numel(), store.numel() - 12);
  ASSERT_FALSE(store.compute_copy_in_one_piece(0, 19));
  expect_one_rank_equals_adamw(specs);
}

// Loss-scaled gradients (x 2^10) and the scale given to reduce_gradients() update the parameters exactly as the unscaled
// gradients do: the norm is reported unscaled and the unscale folds into the step's gradient scale.
TEST(Zero1, TheLossScaleFoldsIntoTheStep) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore plain_store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  ParameterStore scaled_store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  plain_store.initialize(4, 0.5);
  scaled_store.initialize(4, 0.5);
  SingleRankCommunicator group;
  Zero1Optimizer plain(plain_store, config, group);
  Zero1Optimizer scaled(scaled_store, config, group);
  const double loss_scale = 1024.0;
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(plain_store, 0, step);
    testing::fill_rank_grads(scaled_store, 0, step);
    scale_tensor(scaled_store.grads(), static_cast<float>(loss_scale));
    plain.reduce_gradients({.max_norm = 1.0});
    scaled.reduce_gradients({.max_norm = 1.0, .loss_scale = loss_scale});
    EXPECT_EQ(scaled.grad_norm(), plain.grad_norm());
    plain.step(0.01f, step);
    scaled.step(0.01f, step);
  }
  EXPECT_TRUE(same_bytes(plain_store.values(), scaled_store.values()));
  EXPECT_TRUE(same_bytes(plain_store.compute_values(), scaled_store.compute_values()));
}

// An inf or NaN gradient makes the norm non-finite (the trainer's skip test) and the update scale NaN, and the step
// then changes nothing: values, compute copy and moments keep their bytes. A clean step afterwards updates again.
TEST(Zero1, ANonFiniteGradientSkipsTheStep) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  store.initialize(8, 0.5);
  store.refresh_compute_copy();
  SingleRankCommunicator group;
  Zero1Optimizer zero1(store, testing::optimizer_test_config(), group);
  testing::fill_rank_grads(store, 0, 1);
  zero1.reduce_gradients({.max_norm = 1.0});
  zero1.step(0.01f, 1);
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    OwnedTensor values = host_copy(store.values()), compute = host_copy(store.compute_values());
    OwnedTensor exp_avg = host_copy(zero1.partitions()[1].exp_avg());
    testing::fill_rank_grads(store, 0, 2);
    store.grads().data<float>()[30] = bad;  // an expert gradient
    zero1.reduce_gradients({.max_norm = 1.0, .loss_scale = 8.0});
    EXPECT_FALSE(std::isfinite(zero1.grad_norm()));
    EXPECT_TRUE(std::isnan(zero1.update_scale().data<float>()[0]));
    zero1.step(0.01f, 2);
    EXPECT_TRUE(same_bytes(values, store.values()));
    EXPECT_TRUE(same_bytes(compute, store.compute_values()));
    EXPECT_TRUE(same_bytes(exp_avg, zero1.partitions()[1].exp_avg()));
  }
  OwnedTensor values = host_copy(store.values());
  testing::fill_rank_grads(store, 0, 3);
  zero1.reduce_gradients({.max_norm = 1.0});
  EXPECT_TRUE(std::isfinite(zero1.grad_norm()));
  zero1.step(0.01f, 2);
  EXPECT_FALSE(same_bytes(values, store.values()));
}

// Buckets: the dense parameters in 1 and 2, each expert its own; the forward asks for them in another order than
// the layout's.
int forward_bucket(const ParameterSpec& spec) {
  if (spec.name.starts_with("experts.")) return spec.name == "experts.0.weight" ? 3 : 4;
  return spec.name == "x.bias" ? 2 : 1;
}

// Updates left running beside the next forward (each bucket joined when the forward asks for it, the rest by
// join_step) give the same bytes as updates within step(): values, compute copy, moments and FP8 copies (those of
// FP8-only experts quantised beside the forward, w.weight's, in a partition with holes, within the step).
TEST(Zero1, UpdatesUnderTheForwardEqualUpdatesWithinTheStep) {
  std::vector<ParameterSpec> specs = fp8_specs();
  for (ParameterSpec& spec : specs) {
    if (spec.group == ParameterGroup::expert) spec.fp8_gemm = spec.fp8_only = true;
  }
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore within_store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  ParameterStore beside_store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  for (ParameterStore* store : {&within_store, &beside_store}) {
    store->initialize(9, 0.5);
    store->refresh_compute_copy();
  }
  SingleRankCommunicator group;
  Zero1Optimizer within(within_store, config, group, group,
                        {.bucket_of = forward_bucket, .reads_fp32_value = nullptr});
  Zero1Optimizer beside(beside_store, config, group, group,
                        {.bucket_of = forward_bucket, .reads_fp32_value = nullptr, .update_under_forward = true});
  for (int64_t step = 1; step <= 3; ++step) {
    for (ParameterStore* store : {&within_store, &beside_store}) testing::fill_rank_grads(*store, 0, step);
    within.reduce_gradients({.max_norm = 1.0});
    beside.reduce_gradients({.max_norm = 1.0});
    within.step(0.01f, step);
    beside.step(0.01f, step);
    for (int bucket : {4, 2, 1}) beside.parameters_needed(bucket);  // the forward's order; 3 left to join_step
    beside.join_step();
  }
  expect_same_parameters(within_store, beside_store);
  for (size_t i = 0; i < within.partitions().size(); ++i) {
    EXPECT_TRUE(same_bytes(within.partitions()[i].exp_avg(), beside.partitions()[i].exp_avg())) << i;
  }
}

TEST(Zero1, StoreOrderIsDenseThenExpertThenUntrainedKeepingTheOrderWithinEach) {
  std::vector<ParameterSpec> specs = zero1_store_order({
      {"a", Shape{1}, ParameterGroup::expert},
      {"bias", Shape{1}, ParameterGroup::dense, ParameterInit::zeros, false, false},
      {"b", Shape{1}, ParameterGroup::dense},
      {"c", Shape{1}, ParameterGroup::expert},
      {"bias2", Shape{1}, ParameterGroup::dense, ParameterInit::zeros, false, false},
      {"d", Shape{1}, ParameterGroup::dense},
  });
  std::vector<std::string> names;
  for (const ParameterSpec& spec : specs) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "d", "a", "c", "bias", "bias2"}));
  names.clear();
  for (const ParameterSpec& spec : zero1_store_order(specs, [](const ParameterSpec& spec) { return spec.name == "d"; })) {
    names.push_back(spec.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"d", "b", "a", "c", "bias", "bias2"}));
}

TEST(Zero1, RefusesExpertGradientsBeforeDenseOnes) {
  ParameterStore store({{"experts.0.weight", Shape{2}, ParameterGroup::expert}, {"w", Shape{2}}}, Device::cpu());
  SingleRankCommunicator group;
  EXPECT_THROW((Zero1Optimizer{store, testing::optimizer_test_config(), group}), Error);
}

}  // namespace
}  // namespace hai
