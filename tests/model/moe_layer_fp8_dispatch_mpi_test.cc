// FP8 expert dispatch (precision.mode fp8): the MoE layer with its routed experts split over ep ranks, the rows
// sent in FP8 (ExpertExchange::dispatch_fp8) and read by the experts' FP8 GEMMs as they arrive, gives each rank
// exactly, bit for bit, the output and input gradient of the same layer holding every expert on that rank alone,
// which quantises its token rows and permutes the e4m3 rows and scales: quantisation is per row, and every other
// step computes each row on its own. Every ep that
// divides the world is checked; each rank routes its own tokens. The combine starts from a residual, as in a decoder
// layer.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/expert_parallel_parameters.h"
#include "model/moe_layer.h"
#include "model/parameters.h"
#include "parallel/topology.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// 8 routed experts in 4 groups, top-2 of the 2 best groups, 1 shared expert; H = 160: a whole and a partial
// 128-column tile per row. 2 sequences of 8 tokens per rank.
constexpr int64_t kLayer = 1, kHidden = 160, kSeqLen = 8, kTokens = 16;

ModelConfig moe_model() {
  ModelConfig model;
  model.hidden_size = kHidden;
  model.num_layers = 2;
  model.first_dense_layers = 1;
  model.mtp_depth = 0;
  model.moe.routed_experts = 8;
  model.moe.shared_experts = 1;
  model.moe.experts_per_token = 2;
  model.moe.expert_ffn_size = 32;
  model.moe.groups = 4;
  model.moe.groups_per_token = 2;
  return model;
}

// The MoE layer's parameters among `specs`, in FP8 mode (bf16 compute copies and FP8 weight copies).
ParameterStore fp8_moe_store(const std::vector<ParameterSpec>& specs) {
  std::vector<ParameterSpec> layer_specs;
  for (const ParameterSpec& spec : specs) {
    if (spec.name.starts_with(layer_prefix(kLayer) + "mlp.")) layer_specs.push_back(spec);
  }
  ParameterStore store(std::move(layer_specs), Device::cpu(), DType::bf16, Fp8WeightOptions{.enabled = true});
  store.initialize(/*seed=*/5, /*init_std=*/0.2);
  store.refresh_compute_copy();
  return store;
}

struct LayerResult {
  OwnedTensor out;  // [T, H]
  OwnedTensor d_x;  // [T, H]
};

// residual: [T, H], the decoder layer's h, where the combine starts.
LayerResult run_layer(const MoeLayer& layer, const Tensor& x, const Tensor& residual, const Tensor& d_out) {
  LayerResult result{OwnedTensor(x.shape(), DType::f32), OwnedTensor(x.shape(), DType::f32)};
  MoeLayer::Context ctx;
  layer.forward(ctx, result.out, x, kSeqLen, residual);
  layer.backward_input(ctx, result.d_x, d_out, /*balance_loss_grad=*/1.0f);
  return result;
}

void expect_same_bits(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.numel(), actual.numel()) << what;
  EXPECT_EQ(std::memcmp(expected.raw(), actual.raw(), static_cast<size_t>(expected.numel()) * sizeof(float)), 0)
      << what << " differs";
}

using MoeFp8DispatchWorld = testing::World;

TEST_F(MoeFp8DispatchWorld, ExpertParallelRanksMatchOneRankBitForBit) {
  const ModelConfig model = moe_model();
  OwnedTensor x = testing::random_tensor({kTokens, kHidden}, 100 + static_cast<uint64_t>(rank()));      // [T, H]
  OwnedTensor d_out = testing::random_tensor({kTokens, kHidden}, 200 + static_cast<uint64_t>(rank()));  // [T, H]
  OwnedTensor residual = testing::random_tensor({kTokens, kHidden}, 300 + static_cast<uint64_t>(rank()));  // [T, H]
  ParameterStore whole = fp8_moe_store(deepseek_v3_parameters(model));
  LayerResult alone = run_layer(MoeLayer(model, whole, kLayer), x, residual, d_out);

  for (int ep = 2; ep <= size(); ++ep) {
    if (size() % ep != 0 || model.moe.routed_experts % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    ExpertExchange exchange(*groups.ep, model.moe.routed_experts);
    ParameterStore share = fp8_moe_store(expert_parallel_parameters(model, groups.ep->rank(), ep));
    LayerResult split = run_layer(MoeLayer(model, share, kLayer, &exchange), x, residual, d_out);
    expect_same_bits(alone.out, split.out, "ep " + std::to_string(ep) + " output");
    expect_same_bits(alone.d_x, split.d_x, "ep " + std::to_string(ep) + " input gradient");
  }
}

}  // namespace
}  // namespace hai
