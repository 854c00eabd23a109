#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model/parameters.h"

namespace hai {
namespace {

// docs/deepseek-v3.md, "Model shape (671B)".
ModelConfig deepseek_v3_671b() {
  ModelConfig m;
  m.vocab_size = 129280;
  m.hidden_size = 7168;
  m.num_layers = 61;
  m.first_dense_layers = 3;
  m.dense_ffn_size = 18432;
  m.num_heads = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_nope_head_dim = 128;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  m.moe.routed_experts = 256;
  m.moe.shared_experts = 1;
  m.moe.experts_per_token = 8;
  m.moe.expert_ffn_size = 2048;
  m.moe.groups = 8;
  m.moe.groups_per_token = 4;
  m.mtp_depth = 1;
  return m;
}

TEST(Parameters, DeepSeekV3Counts) {
  ParameterCounts counts = count_parameters(deepseek_v3_671b());
  // 671B total and 37B activated (report); 11.5B unique MTP parameters.
  EXPECT_NEAR(static_cast<double>(counts.total) / 671e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(counts.activated) / 37e9, 1.0, 0.03);
  EXPECT_NEAR(static_cast<double>(counts.mtp) / 11.5e9, 1.0, 0.02);
  EXPECT_EQ(counts.total, 671026419200);  // exact sum of the shapes
}

TEST(Parameters, HfNamesAndShapes) {
  ModelConfig m = deepseek_v3_671b();
  std::vector<ParameterSpec> specs = deepseek_v3_parameters(m);
  std::set<std::string> names;
  for (const auto& spec : specs) EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
  auto shape_of = [&](const std::string& name) {
    for (const auto& spec : specs) {
      if (spec.name == name) return spec.shape;
    }
    ADD_FAILURE() << "missing " << name;
    return Shape{};
  };
  EXPECT_EQ(shape_of("model.embed_tokens.weight"), (Shape{129280, 7168}));
  EXPECT_EQ(shape_of("model.layers.0.self_attn.q_a_proj.weight"), (Shape{1536, 7168}));
  EXPECT_EQ(shape_of("model.layers.0.self_attn.q_b_proj.weight"), (Shape{128 * 192, 1536}));
  EXPECT_EQ(shape_of("model.layers.0.self_attn.kv_a_proj_with_mqa.weight"), (Shape{576, 7168}));
  EXPECT_EQ(shape_of("model.layers.0.self_attn.kv_b_proj.weight"), (Shape{128 * 256, 512}));
  EXPECT_EQ(shape_of("model.layers.0.self_attn.o_proj.weight"), (Shape{7168, 128 * 128}));
  EXPECT_EQ(shape_of("model.layers.2.mlp.down_proj.weight"), (Shape{7168, 18432}));
  EXPECT_EQ(shape_of("model.layers.3.mlp.gate.weight"), (Shape{256, 7168}));
  EXPECT_EQ(shape_of("model.layers.3.mlp.gate.e_score_correction_bias"), (Shape{256}));
  EXPECT_EQ(shape_of("model.layers.60.mlp.experts.255.up_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(shape_of("model.layers.3.mlp.shared_experts.gate_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(shape_of("model.layers.61.eh_proj.weight"), (Shape{7168, 14336}));
  EXPECT_EQ(shape_of("model.layers.61.shared_head.norm.weight"), (Shape{7168}));
  EXPECT_EQ(shape_of("model.layers.61.mlp.experts.0.down_proj.weight"), (Shape{7168, 2048}));
  EXPECT_EQ(shape_of("lm_head.weight"), (Shape{129280, 7168}));
  EXPECT_EQ(names.count("model.layers.62.enorm.weight"), 0u);
}

TEST(Parameters, GroupsDecayAndTrainability) {
  ModelConfig m;  // the tiny default
  for (const auto& spec : deepseek_v3_parameters(m)) {
    bool is_expert = spec.name.find(".mlp.experts.") != std::string::npos;
    EXPECT_EQ(spec.group == ParameterGroup::expert, is_expert) << spec.name;
    bool is_vector = spec.shape.rank() == 1;
    EXPECT_EQ(spec.weight_decay, !is_vector) << spec.name;
    EXPECT_EQ(spec.trainable, spec.name.find("e_score_correction_bias") == std::string::npos) << spec.name;
  }
}

// FP8 GEMMs (precision.mode fp8): the projections of attention, the dense MLP, the shared and the routed experts
// (only the routed experts' are fp8_only: no compute copy); not the gate, embedding, head, MTP eh_proj or the norms.
TEST(Parameters, Fp8GemmWeights) {
  ModelConfig m;  // the tiny default
  m.mtp_depth = 1;
  std::set<std::string> fp8_projections = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj",
                                           "gate_proj", "up_proj", "down_proj"};
  int fp8_weights = 0, routed_fp8_weights = 0;
  for (const auto& spec : deepseek_v3_parameters(m)) {
    std::string name = spec.name;
    size_t end = name.rfind(".weight"), begin = name.rfind('.', end - 1) + 1;
    bool projection = end != std::string::npos && fp8_projections.count(name.substr(begin, end - begin)) > 0;
    bool routed = name.find(".mlp.experts.") != std::string::npos;
    EXPECT_EQ(spec.fp8_gemm, projection) << name;
    EXPECT_EQ(spec.fp8_only, projection) << name;  // every FP8 weight's GEMMs read only its FP8 copies
    fp8_weights += spec.fp8_gemm;
    routed_fp8_weights += spec.fp8_gemm && routed;
  }
  EXPECT_GT(routed_fp8_weights, 0);
  EXPECT_GT(fp8_weights, routed_fp8_weights);
}

TEST(Parameters, FlopsPerToken) {
  ModelConfig m = deepseek_v3_671b();
  m.mtp_depth = 0;
  ParameterCounts counts = count_parameters(m);
  // Without MTP: 6 x (activated - embedding - norms and biases) + attention.
  double matmul = static_cast<double>(counts.activated - counts.embedding);
  double attention = 3.0 * 61 * 128 * 4096 * (192 + 128);
  double flops = training_flops_per_token(m, 4096);
  EXPECT_NEAR(flops, 6.0 * matmul + attention, 6.0 * 2e6);  // norms and routing biases are ~1.1M parameters
  EXPECT_GT(flops, 6.0 * 35e9);
}

}  // namespace
}  // namespace hai
