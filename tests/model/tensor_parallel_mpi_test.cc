// Tensor parallelism on CPU ranks (fp32) against the model on one rank: every rank of the job is a tp rank (tp = 2
// or 4) holding its share of a tiny model (rank_share.h: heads, FFN columns, vocabulary rows; a vocabulary of 11 that
// neither tp divides), copied from the reference's parameters; every rank also runs the whole model as the
// reference. For ten steps of SGD, each from the reference's parameters: the objective agrees to 1e-6 relative, every
// held box of every gradient (a routed expert's summed over the tp ranks, as its expert-DP group sums it) equals the
// reference's box to 1e-5 relative, and the routed token counts are equal.
// The same under sequence parallelism (each tp rank's tokens' part of a gradient of a parameter it holds whole,
// and of the routed counts, summed over the tp ranks). And a decoder layer's activation memory per tp rank with and
// without sequence parallelism against the --dry-run plan, and the sequence-parallel primitives themselves.
// NOTE: not bit for bit: the row-parallel projections (o_proj, down_proj) and the vocabulary-parallel loss add
// partial sums over the tp ranks, another order of fp32 sums than one rank's (measured: 5e-8 relative on the
// objective, up to 3e-6 on a gradient).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/core/rng.h"
#include "framework/device/elementwise.h"
#include "framework/metrics/step_profiler.h"
#include "framework/tensor/device_memory.h"
#include "model/decoder_layer.h"
#include "model/deepseek_v3_model.h"
#include "model/memory_estimate.h"
#include "model/model_rope_table.h"
#include "model/parameters.h"
#include "model/rank_share.h"
#include "parallel/sequence_parallel.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/framework/device/test_util.h"
#include "tests/model/larger_shape_config.h"
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
  explicit TensorParallelModelTest(bool sequence_parallel = false)
      : config_(tensor_parallel_model()),
        share_(rank_share(config_, tensor_parallel_layout(size()), {.dp = 0, .pp = 0, .tp = rank()})),
        reference_store_(deepseek_v3_parameters(config_), Device::cpu()),
        tp_store_(share_specs(share_), Device::cpu()),
        reference_(config_, reference_store_),
        model_(config_, tp_store_, nullptr, TensorParallel(world_.get(), sequence_parallel)) {
    reference_store_.initialize(5, 0.3);
    copy_reference_values();
  }

  void copy_reference_values() {
    for (const HeldParameter& held : share_) {
      copy_box(reference_store_[held.spec.name].value, tp_store_[held.spec.name].value, held.box_offsets, true);
    }
  }

  // Ten steps of SGD from the reference's parameters: the objective, every held box of every gradient and the
  // routed counts against the reference's. Under sequence parallelism each rank's gradient of a parameter it holds
  // whole (replicated, or a routed expert) and its routed counts are its tokens' part: summed over the tp ranks
  // first, as the trainer (ReplicatedGradientSum) and the expert-DP group sum them.
  void expect_ten_reference_steps(bool sequence_parallel) {
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
        // NOTE: without sequence parallelism every tp rank routes the same tokens: the expert-DP group (here the tp
        // ranks) sums its copies.
        bool expert = held.spec.group == ParameterGroup::expert;
        if (expert || (sequence_parallel && !held.split_over_tp)) world_->all_reduce(grad, ReduceOp::sum);
        OwnedTensor expected_box(grad.shape(), DType::f32);
        copy_box(reference_store_[held.spec.name].grad, expected_box, held.box_offsets, true);
        EXPECT_LE(relative_distance(expected_box, grad), 1e-5) << "step " << step << " " << held.spec.name;
      }
      if (sequence_parallel) world_->all_reduce(model_.expert_load(), ReduceOp::sum);
      EXPECT_EQ(std::memcmp(reference_.expert_load().raw(), model_.expert_load().raw(),
                            reference_.expert_load().bytes()),
                0)
          << "step " << step;
      // NOTE: both go on from the same parameters: routing near a tie turns 1e-7 into 1e-2 within a few steps.
      sgd_step(reference_store_, 0.1f);
      copy_reference_values();
    }
  }

  ModelConfig config_;
  std::vector<HeldParameter> share_;
  ParameterStore reference_store_, tp_store_;
  DeepseekV3Model reference_, model_;
};

TEST_F(TensorParallelModelTest, TenStepsGiveTheSingleRankLossesGradientsAndExpertLoad) {
  expect_ten_reference_steps(/*sequence_parallel=*/false);
}

// Sequence parallelism: each tp rank runs the residual stream, norms, router and routed experts on its 12 / tp of the
// micro-batch's 12 tokens.
class SequenceParallelModelTest : public TensorParallelModelTest {
 protected:
  SequenceParallelModelTest() : TensorParallelModelTest(/*sequence_parallel=*/true) {}
};

TEST_F(SequenceParallelModelTest, TenStepsGiveTheSingleRankLossesGradientsAndExpertLoad) {
  expect_ten_reference_steps(/*sequence_parallel=*/true);
}

// The layers' recomputation under sequence parallelism gathers again what it remakes: the same steps.
TEST_F(SequenceParallelModelTest, RecomputationGivesTheSingleRankSteps) {
  for (RecomputeMode mode : {RecomputeMode::selective, RecomputeMode::full}) {
    SCOPED_TRACE(to_string(mode));
    model_.set_recompute(mode);
    expect_ten_reference_steps(/*sequence_parallel=*/true);
  }
}

// The sequence-parallel primitives (parallel/sequence_parallel.h) on every rank of the job as one tp group: the
// gather puts each rank's rows in rank order, the reduce-scatter keeps this rank's rows of the sum (overwriting or
// adding), and ReplicatedGradientSum sums each gradient once a step, a bucket announced final first.
TEST_F(TensorParallelModelTest, SequencePrimitivesGatherScatterAndSumOnce) {
  TensorParallel tp(world_.get(), /*sequence_parallel=*/true);
  const int64_t rows = 3, columns = 5, all_rows = rows * size();
  EXPECT_EQ(sequence_rows(tp, all_rows), rows);
  OwnedTensor mine = testing::random_tensor({rows, columns}, 11 + rank());  // [3, 5]
  OwnedTensor gathered;
  Tensor whole = all_gather_sequence(tp, mine, gathered);  // [3 size, 5]
  ASSERT_EQ(whole.shape(), (Shape{all_rows, columns}));
  for (int r = 0; r < size(); ++r) {
    OwnedTensor expected = testing::random_tensor({rows, columns}, 11 + r);
    EXPECT_EQ(std::memcmp(whole.slice(r * rows, (r + 1) * rows).raw(), expected.tensor().raw(),
                          expected.tensor().bytes()),
              0)
        << "rank " << r << "'s rows";
  }
  EXPECT_EQ(std::memcmp(local_sequence_rows(tp, whole).raw(), mine.tensor().raw(), mine.tensor().bytes()), 0);

  OwnedTensor partial = testing::random_tensor({all_rows, columns}, 21 + rank());  // [3 size, 5] this rank's part
  OwnedTensor sum = zero_tensor(Shape{all_rows, columns}, DType::f32);
  for (int r = 0; r < size(); ++r) add_scaled(sum, testing::random_tensor({all_rows, columns}, 21 + r));
  OwnedTensor out = testing::random_tensor({rows, columns}, 31);  // [3, 5]
  OwnedTensor before = testing::random_tensor({rows, columns}, 31);
  OwnedTensor scratch = testing::random_tensor({all_rows, columns}, 21 + rank());
  reduce_scatter_sequence(tp, out, scratch, /*accumulate=*/true);
  add_scaled(before, local_sequence_rows(tp, sum));
  EXPECT_LE(relative_distance(before, out), 1e-6);
  reduce_scatter_sequence(tp, out, /*accumulate=*/false,
                          [&](const Tensor& y, bool) { copy_tensor(y, partial); });
  EXPECT_LE(relative_distance(local_sequence_rows(tp, sum), out), 1e-6);

  OwnedTensor first = zero_tensor(Shape{2}, DType::f32), second = zero_tensor(Shape{2}, DType::f32);
  fill_tensor(first, 1.0f);
  fill_tensor(second, 2.0f);
  ReplicatedGradientSum sums(tp, {{.bucket = 1, .grad = first}, {.bucket = 2, .grad = second}});
  sums.bucket_final(1);
  sums.bucket_final(1);  // once a step
  sums.finish_step();    // the rest: bucket 2
  EXPECT_EQ(first.tensor().data<float>()[0], static_cast<float>(size()));
  EXPECT_EQ(second.tensor().data<float>()[1], 2.0f * static_cast<float>(size()));
  sums.finish_step();  // the next step sums both again
  EXPECT_EQ(first.tensor().data<float>()[0], static_cast<float>(size() * size()));
}

// Under a step's profile the sequence-parallel row moves, like the all-reduces, are charged to
// "<pass>.tp_collective" of the pass they interrupt, which resumes after each: per step, forward one gather and
// two reduce-scatters (overwriting, adding), backward_input one gather and one sum, and the step's replicated
// gradient sum (ReplicatedGradientSum, one bucket).
class TensorParallelGroupTest : public testing::World {};

TEST_F(TensorParallelGroupTest, SequenceCollectivesAreChargedToTheTpCollectivePhase) {
  StepProfiler profiler(Device::cpu());
  StepProfiler* running = &profiler;
  TensorParallel tp(world_.get(), /*sequence_parallel=*/true, &running);
  const int64_t rows = 2, columns = 3;
  OwnedTensor mine = testing::random_tensor({rows, columns}, 5);            // [2, 3]
  OwnedTensor whole = testing::random_tensor({rows * size(), columns}, 6);  // [2 size, 3]
  OwnedTensor grad = zero_tensor(Shape{4}, DType::f32);
  ReplicatedGradientSum sums(tp, {{.bucket = 0, .grad = grad}});
  for (int step = 0; step < 2; ++step) {
    profiler.begin_step();
    profiler.mark("forward.attention");
    OwnedTensor gathered;
    all_gather_sequence(tp, mine, gathered);
    reduce_scatter_sequence(tp, mine, whole, /*accumulate=*/false);
    reduce_scatter_sequence(tp, mine, whole, /*accumulate=*/true);
    EXPECT_EQ(profiler.running_phase(), "forward.attention");
    profiler.mark("backward_input.mlp");
    all_gather_sequence(tp, mine, gathered);
    tp.sum(mine);
    EXPECT_EQ(profiler.running_phase(), "backward_input.mlp");
    profiler.mark("step.gradient_reduce_and_norm");
    sums.finish_step();
    profiler.end_step();
  }
  nlohmann::ordered_json report = profiler.report();
  std::map<std::string, double> calls;
  for (const auto& phase : report["phases"]) calls[phase["phase"].get<std::string>()] = phase["calls"].get<double>();
  EXPECT_EQ(calls["forward.tp_collective"], 3);
  EXPECT_EQ(calls["forward.attention"], 4);  // its start and after each collective
  EXPECT_EQ(calls["backward_input.tp_collective"], 2);
  EXPECT_EQ(calls["step.tp_collective"], 1);
}

// Counts the all-reduces issued on a communicator.
class AllReduceCounter : public OperationObserver {
 public:
  void operation_started(Communicator&, OperationRecord operation) override {
    if (operation.name == "all_reduce") ++all_reduces;
  }
  void operation_finished(Communicator&) override {}
  int all_reduces = 0;
};

// ReplicatedGradientSum sums a bucket in one all-reduce of a flat buffer: two buckets of two gradients each (listed
// interleaved) are two all-reduces, and every gradient gets the bits of its own all-reduce.
TEST_F(TensorParallelGroupTest, ReplicatedGradientSumIsOneAllReduceABucket) {
  TensorParallel tp(world_.get(), /*sequence_parallel=*/true);
  const std::vector<Shape> shapes = {Shape{2, 3}, Shape{4}, Shape{5}, Shape{1, 2}};
  const std::vector<int> buckets = {3, 1, 3, 1};
  std::vector<OwnedTensor> grads, expected;
  std::vector<ReplicatedGradientSum::Gradient> listed;
  for (size_t i = 0; i < shapes.size(); ++i) {
    grads.push_back(testing::random_tensor(shapes[i], 40 + 10 * i + static_cast<uint64_t>(rank())));
    expected.push_back(testing::random_tensor(shapes[i], 40 + 10 * i + static_cast<uint64_t>(rank())));
    tp.sum(expected.back());  // one all-reduce a gradient
    listed.push_back({.bucket = buckets[i], .grad = grads.back()});
  }
  auto counter = std::make_shared<AllReduceCounter>();
  world_->set_observer(counter);
  ReplicatedGradientSum sums(tp, listed);
  sums.bucket_final(1);
  EXPECT_EQ(counter->all_reduces, 1);
  sums.finish_step();  // bucket 3
  EXPECT_EQ(counter->all_reduces, 2);
  world_->set_observer(nullptr);
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(std::memcmp(grads[i].tensor().raw(), expected[i].tensor().raw(), expected[i].tensor().bytes()), 0)
        << "gradient " << i;
  }
}

// recompute_memory_test.cc's larger shape (tests/model/larger_shape_config.h) at `tp`.
Config memory_config(int tp, bool sequence_parallel, RecomputeMode recompute) {
  Config config = testing::larger_shape_config();
  config.train.recompute = recompute;
  config.precision.mode = PrecisionMode::fp32;  // the store's
  config.parallel = tensor_parallel_layout(tp);
  config.parallel.sequence_parallel = sequence_parallel;
  return config;
}

// The host bytes the forward of decoder layer `layer` keeps on this tp rank (its input included: this rank's rows
// under sequence parallelism), as recompute_memory_test.cc measures them on one rank.
int64_t measured_layer_bytes(const Config& config, Communicator& tp_group, int64_t layer) {
  TensorParallel tp(&tp_group, config.parallel.sequence_parallel);
  std::vector<HeldParameter> share = rank_share(config.model, config.parallel, {.dp = 0, .pp = 0, .tp = tp.rank()});
  ParameterStore store(share_specs(share), Device::cpu());
  store.initialize(5, 0.3);
  ModelRopeTable rope(config.model, Device::cpu());
  DecoderLayer block(config.model, store, layer, rope.table(), nullptr, tp);
  block.set_recompute(config.train.recompute);
  const int64_t seq_len = config.train.seq_len, tokens = config.train.micro_batch_size * seq_len;
  const int64_t rows = sequence_rows(tp, tokens), hidden = config.model.hidden_size;
  OwnedTensor positions(Shape{tokens}, DType::i32);  // [T]
  for (int64_t t = 0; t < tokens; ++t) positions.data<int32_t>()[t] = static_cast<int32_t>(t % seq_len);
  OwnedTensor out(Shape{rows, hidden}, DType::f32);  // [T_r, H]
  DecoderLayer::Context ctx;
  auto before = static_cast<int64_t>(host_memory_stats().allocated_bytes);
  block.forward(ctx, out, testing::random_tensor({rows, hidden}, 7 + tp.rank()), positions, seq_len);
  return static_cast<int64_t>(host_memory_stats().allocated_bytes) - before;
}

// The activation memory a decoder layer keeps per tp rank, measured against the --dry-run plan
// (layer_saved_bytes_per_token): within 1% with and without sequence parallelism, and less with it (the residual
// stream, norms, latents before their norms, router and routed experts on T / tp tokens). Printed for
// docs/design/tensor-parallel.md.
TEST_F(TensorParallelModelTest, SequenceParallelLayerMemoryFallsAsThePlanSays) {
  for (RecomputeMode recompute : {RecomputeMode::none, RecomputeMode::selective, RecomputeMode::full}) {
    for (int64_t layer : {int64_t{0}, int64_t{1}}) {
      bool moe = layer >= 1;
      int64_t measured[2] = {0, 0};
      for (bool sequence_parallel : {false, true}) {
        Config config = memory_config(size(), sequence_parallel, recompute);
        int64_t bytes = measured_layer_bytes(config, *world_, layer);
        double planned = layer_saved_bytes_per_token(config, moe) *
                         static_cast<double>(config.train.micro_batch_size * config.train.seq_len);
        if (rank() == 0) {
          std::printf("tp %d%s %s %s layer: measured %lld bytes, planned %.0f\n", size(),
                      sequence_parallel ? " + sp" : "", std::string(to_string(recompute)).c_str(),
                      moe ? "moe" : "dense", static_cast<long long>(bytes), planned);
        }
        EXPECT_NEAR(planned, static_cast<double>(bytes), 0.01 * static_cast<double>(bytes))
            << (sequence_parallel ? "sp " : "") << to_string(recompute) << (moe ? " moe" : " dense");
        measured[sequence_parallel ? 1 : 0] = bytes;
      }
      EXPECT_LT(measured[1], measured[0]) << to_string(recompute) << (moe ? " moe" : " dense");
    }
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
