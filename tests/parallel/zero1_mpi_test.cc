// ZeRO-1 over the ranks of the job: the result is AdamW on the mean of the ranks' gradients (computed here on
// one rank from the same gradients), every rank ends with the same values, and each holds only its shard's moments.
// With expert parallelism (ep = world: every rank holds experts of its own, its expert-DP group is itself) the
// dense part is averaged over the ranks as before while each rank's expert gradient, which already sums the
// contributions of every rank's tokens, is only divided by dp; the norm covers every rank's experts.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
#include "framework/device/cast.h"
#include "framework/device/elementwise.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/grad_clip.h"
#include "framework/device/grad_norm.h"
#include "parallel/rank_values.h"
#include "parallel/topology.h"
#include "parallel/zero1.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/parallel/zero1_test_util.h"

namespace hai {
namespace {

using Zero1World = testing::World;

// The mean over ranks of fill_rank_grads(rank, step), into the store's gradients.
void fill_mean_grads(ParameterStore& store, int ranks, int64_t step) {
  ParameterStore scratch(testing::optimizer_test_specs(), Device::cpu());
  zero_fill(store.grads());
  for (int rank = 0; rank < ranks; ++rank) {
    testing::fill_rank_grads(scratch, rank, step);
    add_scaled(store.grads(), scratch.grads(), 1.0f / static_cast<float>(ranks));
  }
}

// A bf16 store of the test's parameters, initialised from `seed` with its compute copy rounded.
void initialize_with_compute_copy(ParameterStore& store, uint64_t seed) {
  store.initialize(seed, 0.5);
  store.refresh_compute_copy();
}

// The model reads only w.norm in fp32: the experts' partition may all-gather its bf16 copy.
bool reads_norm_in_fp32(const ParameterSpec& spec) { return spec.name == "w.norm"; }

// expected == actual * actual_factor, element by element, to tolerance relative to 1 + |expected|.
void expect_close(const Tensor& expected, const Tensor& actual, double tolerance, double actual_factor = 1.0) {
  ASSERT_EQ(expected.numel(), actual.numel());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double want = expected.data<float>()[i], got = actual_factor * actual.data<float>()[i];
    EXPECT_NEAR(got, want, tolerance * (1.0 + std::abs(want))) << "element " << i;
  }
}

TEST_F(Zero1World, EqualsOneRankOnTheMeanGradient) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  ParameterStore reference_store(testing::optimizer_test_specs(), Device::cpu());
  store.initialize(5, 0.5);
  reference_store.initialize(5, 0.5);
  SingleRankCommunicator one_rank;
  Zero1Optimizer zero1(store, config, *world_);
  Zero1Optimizer reference(reference_store, config, one_rank);
  ASSERT_EQ(zero1.partitions().size(), 2u);
  EXPECT_EQ(zero1.partitions()[0].shard().chunk, (19 + size() - 1) / size());  // dense: 19 elements
  EXPECT_EQ(zero1.partitions()[1].shard().chunk, (20 + size() - 1) / size());  // experts: 20 elements
  for (const Zero1Partition& partition : zero1.partitions()) {
    EXPECT_EQ(partition.exp_avg().numel(), partition.shard().numel());  // the shard's moments only
  }
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    fill_mean_grads(reference_store, size(), step);
    zero1.reduce_gradients({.max_norm = 1.5});
    reference.reduce_gradients({.max_norm = 1.5});
    EXPECT_NEAR(zero1.grad_norm(), reference.grad_norm(), 1e-6 * reference.grad_norm());
    for (size_t i = 0; i < 2; ++i) {
      const Zero1Partition& part = zero1.partitions()[i];
      // the shard holds the sum over the ranks; AdamW and the norm divide by their number
      expect_close(reference.partitions()[i].shard_grads().slice(part.shard().begin, part.shard().end),
                   part.shard_grads(), 1e-6, 1.0 / size());
    }
    zero1.step(0.05f, step);
    reference.step(0.05f, step);
  }
  expect_close(reference_store.values(), store.values(), 1e-5);
  for (size_t i = 0; i < 2; ++i) {
    const Zero1Partition& part = zero1.partitions()[i];
    expect_close(reference.partitions()[i].exp_avg().slice(part.shard().begin, part.shard().end), part.exp_avg(),
                 1e-5);
  }

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

TEST_F(Zero1World, ExpertsOfEachRankReduceOverItsExpertDpGroupOnly) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = size()});
  ASSERT_EQ(groups.expert_dp->size(), 1);
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  ParameterStore reference_store(testing::optimizer_test_specs(), Device::cpu());
  store.initialize(5, 0.5);
  reference_store.initialize(5, 0.5);
  SingleRankCommunicator one_rank;
  Zero1Optimizer zero1(store, config, *groups.dp, *groups.expert_dp);
  Zero1Optimizer reference(reference_store, config, one_rank);
  const int64_t dense = 19;  // the dense gradients [0, 19), this rank's experts [19, 39)
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    // The reference: the mean dense gradient, and this rank's expert gradient divided by dp.
    fill_mean_grads(reference_store, size(), step);
    copy_tensor(reference_store.grads().slice(dense, 39), store.grads().slice(dense, 39));
    scale_tensor(reference_store.grads().slice(dense, 39), 1.0f / static_cast<float>(size()));
    // Its norm lacks the other ranks' experts: it is clipped here by the global norm, and not by its optimizer.
    double own_experts = grad_norm_squared({reference_store.grads().slice(dense, 39)});
    double norm = std::sqrt(grad_norm_squared({reference_store.grads()}) - own_experts +
                            sum_over_ranks(*world_, own_experts));
    scale_tensor(reference_store.grads(), static_cast<float>(clip_factor(norm, 1.5)));
    zero1.reduce_gradients({.max_norm = 1.5});
    reference.reduce_gradients();
    EXPECT_NEAR(zero1.grad_norm(), norm, 1e-6 * norm);
    zero1.step(0.05f, step);
    reference.step(0.05f, step);
  }
  expect_close(reference_store.values(), store.values(), 1e-5);
}

// Buckets: "w." and experts.0 in bucket 1, x.bias in bucket 0, experts.1 at the end.
int test_bucket(const ParameterSpec& spec) {
  if (spec.name.starts_with("w.") || spec.name == "experts.0.weight") return 1;
  return spec.name == "x.bias" ? 0 : kGradientsFinalAtEnd;
}

TEST(GradientBucketRanges, CutTheDenseAndExpertRangesWhereTheBucketChanges) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  std::vector<BucketRange> ranges = gradient_bucket_ranges(store, test_bucket);
  ASSERT_EQ(ranges.size(), 4u);
  auto expect_range = [&](size_t i, int64_t begin, int64_t end, int bucket) {
    EXPECT_EQ(ranges[i].begin, begin) << i;
    EXPECT_EQ(ranges[i].end, end) << i;
    EXPECT_EQ(ranges[i].bucket, bucket) << i;
  };
  expect_range(0, 0, 16, 1);  // w.weight [12] and w.norm [4] (gate.bias has no gradient)
  expect_range(1, 16, 19, 0);
  expect_range(2, 19, 29, 1);
  expect_range(3, 29, 39, kGradientsFinalAtEnd);
}

// Reductions started early, bucket by bucket and in another order than the layout's, give the optimizer without
// buckets: the same gradient norm and values, each rank's moments those of its chunk of every bucket.
TEST_F(Zero1World, BucketsReducedDuringTheBackwardEqualOneReductionAtTheEnd) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  ParameterStore reference_store(testing::optimizer_test_specs(), Device::cpu());
  store.initialize(5, 0.5);
  reference_store.initialize(5, 0.5);
  Zero1Optimizer bucketed(store, config, *world_, *world_, {.bucket_of = test_bucket, .reads_fp32_value = {}});
  Zero1Optimizer reference(reference_store, config, *world_);
  ASSERT_EQ(bucketed.partitions().size(), 4u);
  for (int64_t step = 1; step <= 3; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    testing::fill_rank_grads(reference_store, rank(), step);
    bucketed.gradients_final(1);
    bucketed.gradients_final(0);
    EXPECT_THROW(bucketed.gradients_final(0), Error);  // once per step
    bucketed.reduce_gradients({.max_norm = 1.5});
    reference.reduce_gradients({.max_norm = 1.5});
    // fp32 sums, other chunking over 4 ranks
    EXPECT_NEAR(bucketed.grad_norm(), reference.grad_norm(), 1e-6 * reference.grad_norm());
    bucketed.step(0.05f, step);
    reference.step(0.05f, step);
  }
  expect_close(reference_store.values(), store.values(), 1e-6);
}

// With a bf16 compute copy, a sharded partition whose parameters no rank reads in fp32 (the experts here; the dense
// one holds w.norm, read in fp32) all-gathers the copy instead of the values: every rank ends with bitwise the copy
// of the fp32 gather, the fp32 values of the experts other ranks own stay stale, and gather_master_values() makes
// every value the fp32 gather's.
TEST_F(Zero1World, GatheringTheComputeCopyGivesTheSameCopyAndTheValuesOnDemand) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  ParameterStore reference_store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  for (ParameterStore* each : {&store, &reference_store}) initialize_with_compute_copy(*each, 6);
  Zero1Optimizer halves(store, config, *world_, *world_, {.bucket_of = {}, .reads_fp32_value = reads_norm_in_fp32});
  Zero1Optimizer reference(reference_store, config, *world_);
  ASSERT_EQ(halves.partitions().size(), 2u);
  EXPECT_FALSE(halves.partitions()[0].gathers_compute_copy());
  EXPECT_EQ(halves.partitions()[1].gathers_compute_copy(), size() > 1);  // unsharded, nothing is gathered
  // The experts' 20 values follow their gradients: gathered in place where they split evenly (2 and 4 ranks, not
  // 3); the dense range (19 elements, gate.bias among its values) is staged.
  EXPECT_FALSE(halves.partitions()[0].gathers_in_place());
  EXPECT_EQ(halves.partitions()[1].gathers_in_place(), size() > 1 && 20 % size() == 0);
  for (int64_t step = 1; step <= 2; ++step) {
    for (ParameterStore* each : {&store, &reference_store}) testing::fill_rank_grads(*each, rank(), step);
    halves.reduce_gradients({.max_norm = 1.5});
    reference.reduce_gradients({.max_norm = 1.5});
    halves.step(0.05f, step);
    reference.step(0.05f, step);
  }
  EXPECT_TRUE(testing::same_bytes(store.compute_values(), reference_store.compute_values()));
  if (size() > 1) {
    EXPECT_FALSE(testing::same_bytes(store.values(), reference_store.values()));  // stale experts
  }
  halves.gather_master_values();
  EXPECT_TRUE(testing::same_bytes(store.values(), reference_store.values()));
}

// Left running after step() and joined by parameters_needed() (the next forward's wait), the experts' compute-copy
// gathers give the same copy as gathering within step(); the fp32 values come whole on demand as before.
TEST_F(Zero1World, GathersLeftRunningUnderTheForwardGiveTheSameCopy) {
  OptimizerConfig config = testing::optimizer_test_config();
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  ParameterStore reference_store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  for (ParameterStore* each : {&store, &reference_store}) initialize_with_compute_copy(*each, 7);
  Zero1Optimizer deferred(store, config, *world_, *world_,
                          {.bucket_of = {}, .reads_fp32_value = reads_norm_in_fp32, .gather_under_forward = true});
  Zero1Optimizer reference(reference_store, config, *world_, *world_,
                           {.bucket_of = {}, .reads_fp32_value = reads_norm_in_fp32});
  // Left running: the experts' in-place compute-copy gathers (where they split evenly); the dense range is staged.
  EXPECT_FALSE(deferred.partitions()[0].gathers_in_place());
  EXPECT_EQ(deferred.partitions()[1].gathers_in_place() && deferred.partitions()[1].gathers_compute_copy(),
            size() > 1 && 20 % size() == 0);
  for (int64_t step = 1; step <= 3; ++step) {
    for (ParameterStore* each : {&store, &reference_store}) testing::fill_rank_grads(*each, rank(), step);
    deferred.reduce_gradients({.max_norm = 1.5});
    reference.reduce_gradients({.max_norm = 1.5});
    deferred.step(0.05f, step);
    reference.step(0.05f, step);
    deferred.parameters_needed(kGradientsFinalAtEnd);  // the one bucket of every parameter here
    EXPECT_TRUE(testing::same_bytes(store.compute_values(), reference_store.compute_values())) << step;
  }
  deferred.gather_master_values();
  reference.gather_master_values();
  EXPECT_TRUE(testing::same_bytes(store.values(), reference_store.values()));
}

// An inf on the last rank, in an element the first rank owns, makes the norm non-finite on every rank: the
// trainer's finite check is this norm.
TEST_F(Zero1World, ANonFiniteGradientOnOneRankMakesEveryRanksNormNonFinite) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  Zero1Optimizer zero1(store, testing::optimizer_test_config(), *world_);
  testing::fill_rank_grads(store, rank(), 2);
  if (rank() == size() - 1) store.grads().data<float>()[0] = std::numeric_limits<float>::infinity();
  zero1.reduce_gradients({.max_norm = 1.0});
  EXPECT_FALSE(std::isfinite(zero1.grad_norm()));
  EXPECT_TRUE(std::isnan(zero1.update_scale().data<float>()[0]));  // every rank skips the step
}

// Sharded, each rank updates its shard and rounds the whole range's compute copy after the all-gather: every
// rank's bf16 copy is the rounding of its (equal) values.
TEST_F(Zero1World, TheComputeCopyFollowsTheGatheredValues) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu(), DType::bf16);
  store.initialize(6, 0.5);
  store.refresh_compute_copy();
  Zero1Optimizer zero1(store, testing::optimizer_test_config(), *world_);
  for (int64_t step = 1; step <= 2; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    zero1.reduce_gradients({.max_norm = 1.5});
    zero1.step(0.05f, step);
  }
  OwnedTensor rounded(store.values().shape(), DType::bf16);  // [N]
  cast_tensor(rounded, store.values());
  for (int64_t i = 0; i < store.numel(); ++i) {
    ASSERT_EQ(store.compute_values().data<bf16>()[i].bits, rounded.tensor().data<bf16>()[i].bits) << i;
  }
}

// precision.mode fp8 with FP8-only experts (the routed experts: FP8 copies, no compute copy), sharded: the compute
// copy, which skips the experts, is still the rounding of every other parameter's (gathered) values, and the
// experts' FP8 copies the quantisation of theirs, on every rank.
TEST_F(Zero1World, Fp8OnlyExpertsKeepNoComputeCopyAndTheirFp8CopiesFollowTheValues) {
  std::vector<ParameterSpec> specs = testing::optimizer_test_specs();
  for (ParameterSpec& spec : specs) {
    spec.fp8_gemm = spec.group == ParameterGroup::expert;
    spec.fp8_only = spec.fp8_gemm;
  }
  Zero1Options options{.bucket_of = nullptr, .reads_fp32_value = reads_norm_in_fp32};
  ParameterStore store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  initialize_with_compute_copy(store, 7);
  ASSERT_EQ(store.compute_values().numel(), store.numel() - 20);  // the two experts' 20 elements have none
  Zero1Optimizer zero1(store, testing::optimizer_test_config(), *world_, *world_, options);
  for (int64_t step = 1; step <= 2; ++step) {
    testing::fill_rank_grads(store, rank(), step);
    zero1.reduce_gradients({.max_norm = 1.5});
    zero1.step(0.05f, step);
  }
  zero1.gather_master_values();
  for (const Parameter& parameter : store.parameters()) {
    if (parameter.spec.fp8_only) {
      EXPECT_EQ(parameter.compute.raw(), nullptr) << parameter.spec.name;
      OwnedTensor values(parameter.value.shape(), DType::e4m3), scales(parameter.fp8.scales.shape(), DType::f32);
      quantize_128x128(values, scales, parameter.value);
      EXPECT_TRUE(testing::same_bytes(parameter.fp8.values, values)) << parameter.spec.name;
      EXPECT_TRUE(testing::same_bytes(parameter.fp8.scales, scales)) << parameter.spec.name;
      continue;
    }
    OwnedTensor rounded(parameter.value.shape(), DType::bf16);
    cast_tensor(rounded, parameter.value);
    EXPECT_TRUE(testing::same_bytes(parameter.compute, rounded)) << parameter.spec.name;
  }
  OwnedTensor highest(store.values().shape(), DType::f32);
  copy_tensor(highest, store.values());
  world_->all_reduce(highest, ReduceOp::max);
  EXPECT_TRUE(testing::same_bytes(highest, store.values()));
}

// ZeRO-1 as DeepSeek-V3 runs it: the store keeps no fp32 master of the parameters no one reads in fp32 (all but
// w.norm here), each rank keeps its shard's in its partition. In bf16 (the experts gather their bf16 copy, the dense
// weights their fp32 values) and in fp8 (FP8 copies of the dense weights, FP8-only experts: every sharded range
// gathers fp32 values, staged in the gradients), the compute and FP8 copies are bitwise those of whole masters after
// every step, gather_master_values() stages bitwise the same values, a checkpoint's values taken back continue
// bitwise alike, and the master's bytes fall by the ranks.
TEST_F(Zero1World, ShardedMastersGiveTheCopiesAndValuesOfWholeOnes) {
  if (size() == 1) GTEST_SKIP() << "a sharded master needs several ranks";
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "fp8" : "bf16");
    std::vector<ParameterSpec> specs = testing::optimizer_test_specs();
    for (ParameterSpec& spec : specs) {
      spec.fp8_gemm = fp8 && spec.shape.rank() == 2;
      spec.fp8_only = spec.fp8_gemm && spec.group == ParameterGroup::expert;
    }
    specs = zero1_store_order(specs, reads_norm_in_fp32);
    Fp8WeightOptions fp8_weights{.enabled = fp8};
    ParameterStore store(specs, Device::cpu(), DType::bf16, fp8_weights,
                         zero1_sharded_master(DType::bf16, size(), size(), reads_norm_in_fp32));
    ParameterStore reference_store(specs, Device::cpu(), DType::bf16, fp8_weights);
    for (ParameterStore* each : {&store, &reference_store}) initialize_with_compute_copy(*each, 8);
    Zero1Options options{.bucket_of = nullptr, .reads_fp32_value = reads_norm_in_fp32};
    Zero1Optimizer sharded(store, testing::optimizer_test_config(), *world_, *world_, options);
    Zero1Optimizer reference(reference_store, testing::optimizer_test_config(), *world_, *world_, options);
    // Held: w.norm (4) and gate.bias (2); in shards: w.weight, x.bias (15) and the experts (20).
    EXPECT_EQ(store.values().numel(), 6);
    EXPECT_EQ(reference_store.values().numel(), store.numel());
    int64_t master_elements = 0;
    for (const Zero1Partition& partition : sharded.partitions()) {
      if (partition.shards_master()) master_elements += partition.master().numel();
    }
    EXPECT_EQ(sharded.state_bytes(), reference.state_bytes() + 4 * master_elements);
    EXPECT_EQ(sum_over_ranks(*world_, static_cast<double>(master_elements)), 35.0);
    auto expect_same_copies = [&](const std::string& when) {
      EXPECT_TRUE(testing::same_bytes(store.compute_values(), reference_store.compute_values())) << when;
      for (const Parameter& parameter : store.parameters()) {
        if (!parameter.fp8.defined()) continue;
        const Parameter& expected = reference_store[parameter.spec.name];
        EXPECT_TRUE(testing::same_bytes(parameter.fp8.values, expected.fp8.values)) << when << parameter.spec.name;
        EXPECT_TRUE(testing::same_bytes(parameter.fp8.transposed_scales, expected.fp8.transposed_scales)) << when;
      }
    };
    auto train = [&](int64_t first, int64_t last) {
      for (int64_t step = first; step <= last; ++step) {
        for (ParameterStore* each : {&store, &reference_store}) testing::fill_rank_grads(*each, rank(), step);
        sharded.reduce_gradients({.max_norm = 1.5});
        reference.reduce_gradients({.max_norm = 1.5});
        sharded.step(0.05f, step);
        reference.step(0.05f, step);
        expect_same_copies("step " + std::to_string(step) + " ");
      }
      sharded.gather_master_values();
      reference.gather_master_values();
      for (const Parameter& parameter : store.parameters()) {
        EXPECT_TRUE(testing::same_bytes(parameter.value, reference_store[parameter.spec.name].value))
            << parameter.spec.name;
      }
    };
    train(1, 2);
    // A checkpoint's load: every whole value written into the store, the shards taken from them.
    for (const Parameter& parameter : store.parameters()) {
      copy_tensor(parameter.value, reference_store[parameter.spec.name].value);
    }
    store.refresh_compute_copy();
    sharded.take_master_values();
    train(3, 4);
  }
}

TEST_F(Zero1World, NormIsTheSameOnEveryRank) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  Zero1Optimizer zero1(store, testing::optimizer_test_config(), *world_);
  testing::fill_rank_grads(store, rank(), 9);
  zero1.reduce_gradients({.max_norm = 1.0});
  double norm = zero1.grad_norm();
  OwnedTensor bits(Shape{1}, DType::i64);
  std::memcpy(bits.tensor().raw(), &norm, sizeof norm);
  OwnedTensor highest(Shape{1}, DType::i64);
  copy_tensor(highest, bits);
  world_->all_reduce(highest, ReduceOp::max);
  world_->all_reduce(bits, ReduceOp::min);
  EXPECT_EQ(highest.tensor().data<int64_t>()[0], bits.tensor().data<int64_t>()[0]);
}

}  // namespace
}  // namespace hai
