// The whole model as one pipeline stage (the unpipelined model, docs/architecture.md "One model driver"): its
// interleaved backward (PipelineStage::backward: each layer's W right after its B, as DeepseekV3Model and the
// trainer at pp 1 run it) gives bit for bit the loss sums, gradients and routed-token counts of the split backward
// (backward_input, then backward_weight, as a pipeline schedule runs a stage), in fp32, bf16 and fp8 (emulated),
// over two micro-batches.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/core/rng.h"
#include "model/micro_batch_losses.h"
#include "model/model_rope_table.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/router_biases.h"
#include "tests/model/model_test_inputs.h"
#include "tests/model/recompute_cases.h"

namespace hai {
namespace {

using testing::same_bits;

struct Trained {
  std::unique_ptr<ParameterStore> store;
  OwnedTensor loss_sums;  // [micro-batches, loss slots]
  OwnedTensor load;       // [moe blocks, E]
};

Trained train(const ModelConfig& config, PrecisionMode precision, bool interleaved) {
  Trained run;
  run.store = testing::precision_store(deepseek_v3_parameters(config), precision);
  ModelRopeTable rope(config, Device::cpu());
  std::vector<StageLayers> whole = pipeline_stages(config, 1, {});
  EXPECT_TRUE(whole.front().first && whole.front().last);
  PipelineStage stage(config, *run.store, whole.front(), rope.table());
  EXPECT_TRUE(stage.whole_model());
  constexpr int kMicroBatches = 2;
  run.loss_sums = zero_tensor(Shape{kMicroBatches, loss_slots(config.mtp_depth)}, DType::f32);
  run.load = zero_tensor(Shape{static_cast<int64_t>(moe_block_indices(config).size()), config.moe.routed_experts},
                         DType::i32);
  run.store->zero_grads();
  for (int micro_batch = 0; micro_batch < kMicroBatches; ++micro_batch) {
    OwnedTensor tokens = testing::random_tokens(2, 6, config.vocab_size, CounterRng(7, micro_batch));  // [2, 7]
    MicroBatchInputs batch = upload_micro_batch(tokens, config.mtp_depth, Device::cpu());
    Tensor sums = run.loss_sums.tensor().slice(micro_batch, micro_batch + 1).reshape(Shape{run.loss_sums.shape()[1]});
    PipelineStage::Context ctx;
    stage.forward(ctx, batch, Tensor(), Tensor(), sums, run.load, 0.5f);
    if (interleaved) {
      stage.backward(ctx, batch, Tensor(), Tensor(), 0.5f);
    } else {
      stage.backward_input(ctx, batch, Tensor(), Tensor(), 0.5f);
      stage.backward_weight(ctx, batch);
    }
  }
  run.store->zero_unwritten_grads();
  return run;
}

class WholeModelStage : public ::testing::TestWithParam<PrecisionMode> {};

TEST_P(WholeModelStage, InterleavedBackwardIsTheBitsOfBThenW) {
  ModelConfig config = testing::tiny_test_model(3);
  Trained split = train(config, GetParam(), /*interleaved=*/false);
  Trained interleaved = train(config, GetParam(), /*interleaved=*/true);
  EXPECT_TRUE(same_bits(split.loss_sums, interleaved.loss_sums));
  EXPECT_TRUE(same_bits(split.load, interleaved.load));
  for (const Parameter& parameter : split.store->parameters()) {
    EXPECT_TRUE(same_bits(parameter.grad, (*interleaved.store)[parameter.spec.name].grad)) << parameter.spec.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, WholeModelStage,
                         ::testing::Values(PrecisionMode::fp32, PrecisionMode::bf16, PrecisionMode::fp8),
                         [](const ::testing::TestParamInfo<PrecisionMode>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace hai
