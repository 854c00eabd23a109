// configs/*.yaml parse and validate for the world size they are laid out for, with the shapes they promise.

#include <gtest/gtest.h>

#include <tuple>

#include "framework/config/supported.h"
#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

Config load_shipped(const std::string& name, int world_size) {
  ParsedConfig parsed = parse_config_file(testing::source_path("configs/" + name));
  validate(parsed.config, world_size, parsed.lines);
  return resolve_auto(parsed.config, world_size);
}

TEST(ShippedConfigs, TinyTrainsOnOneRankOnTheGpuWhenThereIsOne) {
  Config config = load_shipped("tiny.yaml", 1);
  EXPECT_EQ(config.model.vocab_size, 257);
  EXPECT_EQ(config.model.num_layers, 3);
  EXPECT_EQ(config.model.moe.routed_experts, 8);
  EXPECT_EQ(config.data.path, "data/fortunes");
  EXPECT_EQ(config.precision.mode, PrecisionMode::fp32);
  EXPECT_EQ(config.runtime.device, RuntimeDevice::automatic);
  EXPECT_EQ(config.parallel.micro_batches, 2);
  EXPECT_NO_THROW(check_supported(config));
}

TEST(ShippedConfigs, BenchMoeMatchesTheGpuMachineShape) {
  Config config = load_shipped("bench_moe_1p7b.yaml", 1);
  const ModelConfig& model = config.model;
  EXPECT_EQ(model.vocab_size, 32768);
  EXPECT_EQ(model.hidden_size, 2048);
  EXPECT_EQ(model.num_layers, 8);
  EXPECT_EQ(model.dense_ffn_size, 5632);
  EXPECT_EQ(model.num_heads, 16);
  EXPECT_EQ(model.kv_lora_rank, 256);
  EXPECT_EQ(model.moe.routed_experts, 32);
  EXPECT_EQ(model.moe.experts_per_token, 4);
  EXPECT_EQ(model.moe.expert_ffn_size, 1024);
  EXPECT_EQ(config.train.seq_len, 2048);
  EXPECT_EQ(config.train.micro_batch_size, 4);
  EXPECT_EQ(config.precision.mode, PrecisionMode::bf16);
  EXPECT_EQ(config.data.source, DataSource::synthetic);
  EXPECT_EQ(config.runtime.device, RuntimeDevice::cuda);
}

// cuBLASLt's block-scaled FP8 GEMMs need every FP8 linear layer's input width a multiple of 128 and its output
// width and token count multiples of 16 (framework/device/fp8_gemm.h).
TEST(ShippedConfigs, Fp8StudyFitsTheFp8GemmShapes) {
  Config config = load_shipped("fp8_study.yaml", 1);
  const ModelConfig& model = config.model;
  EXPECT_NO_THROW(check_supported(config));
  for (int64_t in_features : {model.hidden_size, model.q_lora_rank, model.kv_lora_rank,
                              model.num_heads * model.v_head_dim, model.dense_ffn_size, model.moe.expert_ffn_size}) {
    EXPECT_EQ(in_features % 128, 0) << in_features;
  }
  const int64_t qk_head_dim = model.qk_nope_head_dim + model.qk_rope_head_dim;
  for (int64_t out_features : {model.q_lora_rank, model.num_heads * qk_head_dim,
                               model.kv_lora_rank + model.qk_rope_head_dim,
                               model.num_heads * (model.qk_nope_head_dim + model.v_head_dim)}) {
    EXPECT_EQ(out_features % 16, 0) << out_features;
  }
  EXPECT_EQ(config.train.micro_batch_size * config.train.seq_len % 16, 0);
  EXPECT_EQ(model.vocab_size, 257);
  EXPECT_EQ(config.data.source, DataSource::indexed);
  EXPECT_EQ(config.precision.mode, PrecisionMode::bf16);  // scripts/fp8_study.sh sets it per run
  EXPECT_EQ(config.runtime.device, RuntimeDevice::cuda);
}

TEST(ShippedConfigs, DeepseekV3ReproducesTheReferenceTable) {
  Config config = load_shipped("deepseek_v3_671b.yaml", 2048);
  const ModelConfig& model = config.model;
  EXPECT_EQ(model.hidden_size, 7168);
  EXPECT_EQ(model.num_layers, 61);
  EXPECT_EQ(model.first_dense_layers, 3);
  EXPECT_EQ(model.dense_ffn_size, 18432);
  EXPECT_EQ(model.num_heads, 128);
  EXPECT_EQ(model.q_lora_rank, 1536);
  EXPECT_EQ(model.kv_lora_rank, 512);
  EXPECT_EQ(model.qk_nope_head_dim + model.qk_rope_head_dim, 192);
  EXPECT_EQ(model.v_head_dim, 128);
  EXPECT_EQ(model.vocab_size, 129280);
  EXPECT_EQ(model.moe.routed_experts, 256);
  EXPECT_EQ(model.moe.shared_experts, 1);
  EXPECT_EQ(model.moe.experts_per_token, 8);
  EXPECT_EQ(model.moe.groups, 8);
  EXPECT_EQ(model.moe.groups_per_token, 4);
  EXPECT_EQ(model.moe.expert_ffn_size, 2048);
  EXPECT_EQ(model.rope.yarn.factor, 40.0);
  EXPECT_EQ(model.rope.yarn.original_max_position, 4096);
  EXPECT_EQ(model.rope.yarn.beta_fast, 32.0);
  EXPECT_EQ(model.rope.yarn.beta_slow, 1.0);
  EXPECT_EQ(model.rope.yarn.mscale, 1.0);
  EXPECT_EQ(model.mtp_depth, 1);
  EXPECT_EQ(config.parallel.pp, 16);
  EXPECT_EQ(config.parallel.ep, 64);
  EXPECT_EQ(config.parallel.dp, 128);
  EXPECT_EQ(config.parallel.micro_batches, 120);
  EXPECT_EQ(config.parallel.schedule, PipelineSchedule::dualpipe);
  EXPECT_EQ(config.precision.mode, PrecisionMode::fp8);
}

TEST(ShippedConfigs, DeepseekV3NeedsItsWorldSize) {
  ParsedConfig parsed = parse_config_file(testing::source_path("configs/deepseek_v3_671b.yaml"));
  try {
    validate(parsed.config, 8, parsed.lines);
    FAIL() << "no throw";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key_path(), "parallel.dp");
    EXPECT_EQ(error.problem(), "auto needs the 8 ranks of the job to be a multiple of pp x tp = 16 x 1 = 16");
  }
}

// configs/bench_v3_layers.yaml: DeepSeek-V3's layers at V3's dimensions (configs/deepseek_v3_671b.yaml), fewer of
// them and fewer routed experts, one 4096-token sequence per step, and FP8's GEMM shapes.
TEST(ShippedConfigs, BenchV3LayersHasDeepSeekV3LayerDimensions) {
  Config config = load_shipped("bench_v3_layers.yaml", 1);
  Config v3 = load_shipped("deepseek_v3_671b.yaml", 2048);
  const ModelConfig& model = config.model;
  for (auto [field, ours, theirs] : {std::tuple{"hidden_size", model.hidden_size, v3.model.hidden_size},
                                     {"num_heads", model.num_heads, v3.model.num_heads},
                                     {"q_lora_rank", model.q_lora_rank, v3.model.q_lora_rank},
                                     {"kv_lora_rank", model.kv_lora_rank, v3.model.kv_lora_rank},
                                     {"qk_nope_head_dim", model.qk_nope_head_dim, v3.model.qk_nope_head_dim},
                                     {"qk_rope_head_dim", model.qk_rope_head_dim, v3.model.qk_rope_head_dim},
                                     {"v_head_dim", model.v_head_dim, v3.model.v_head_dim},
                                     {"dense_ffn_size", model.dense_ffn_size, v3.model.dense_ffn_size},
                                     {"expert_ffn_size", model.moe.expert_ffn_size, v3.model.moe.expert_ffn_size},
                                     {"experts_per_token", model.moe.experts_per_token,
                                      v3.model.moe.experts_per_token},
                                     {"groups", model.moe.groups, v3.model.moe.groups},
                                     {"groups_per_token", model.moe.groups_per_token, v3.model.moe.groups_per_token},
                                     {"shared_experts", model.moe.shared_experts, v3.model.moe.shared_experts},
                                     {"seq_len", config.train.seq_len, v3.train.seq_len}}) {
    EXPECT_EQ(ours, theirs) << field;
  }
  EXPECT_EQ(model.vocab_size, 32768);
  EXPECT_EQ(model.num_layers, 2);
  EXPECT_EQ(model.first_dense_layers, 1);
  EXPECT_EQ(model.moe.routed_experts, 32);
  EXPECT_EQ(config.train.micro_batch_size, 1);
  EXPECT_EQ(config.precision.mode, PrecisionMode::bf16);
  EXPECT_NO_THROW(check_supported(config));
}

}  // namespace
}  // namespace hai
