// export-hf writes what the released DeepSeek-V3 checkpoint holds: its tensor names (the MTP module as layer
// num_hidden_layers with its own embed_tokens and shared_head.head), shapes and dtypes, shards with an index, and
// config.json with the DeepseekV3 fields.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hai-ckpt/hf_directory.h"
#include "apps/hai-ckpt/hf_export.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_dtype.h"
#include "tests/apps/hai_ckpt/hai_ckpt_test_util.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::ScratchDir;

struct Stored {
  std::string dtype;
  std::vector<int64_t> shape;
};

// The release's tensors for the tiny config (two layers, layer 0 dense, 2 routed experts + 1 shared, MTP depth
// 1 as layer 2), exported as fp8: linear weights of attention and MLPs in e4m3 with one scale per 128x128 block
// (dense FFN width 160: two blocks along it), the MoE gate, eh_proj, norms, embeddings and heads in BF16, the
// routing bias in F32.
const std::map<std::string, Stored>& release_fp8_tensors() {
  static const std::map<std::string, Stored> tensors = {
      {"lm_head.weight", {"BF16", {40, 16}}},
      {"model.embed_tokens.weight", {"BF16", {40, 16}}},
      {"model.layers.0.input_layernorm.weight", {"BF16", {16}}},
      {"model.layers.0.mlp.down_proj.weight", {"F8_E4M3", {16, 160}}},
      {"model.layers.0.mlp.down_proj.weight_scale_inv", {"F32", {1, 2}}},
      {"model.layers.0.mlp.gate_proj.weight", {"F8_E4M3", {160, 16}}},
      {"model.layers.0.mlp.gate_proj.weight_scale_inv", {"F32", {2, 1}}},
      {"model.layers.0.mlp.up_proj.weight", {"F8_E4M3", {160, 16}}},
      {"model.layers.0.mlp.up_proj.weight_scale_inv", {"F32", {2, 1}}},
      {"model.layers.0.post_attention_layernorm.weight", {"BF16", {16}}},
      {"model.layers.0.self_attn.kv_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight", {"F8_E4M3", {12, 16}}},
      {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.0.self_attn.kv_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.0.self_attn.kv_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.0.self_attn.o_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.0.self_attn.o_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.0.self_attn.q_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.0.self_attn.q_a_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.0.self_attn.q_a_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.0.self_attn.q_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.0.self_attn.q_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.input_layernorm.weight", {"BF16", {16}}},
      {"model.layers.1.mlp.experts.0.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.mlp.experts.0.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.experts.0.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.experts.0.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.experts.0.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.experts.0.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.experts.1.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.mlp.experts.1.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.experts.1.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.experts.1.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.experts.1.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.experts.1.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.gate.e_score_correction_bias", {"F32", {2}}},
      {"model.layers.1.mlp.gate.weight", {"BF16", {2, 16}}},
      {"model.layers.1.mlp.shared_experts.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.mlp.shared_experts.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.shared_experts.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.shared_experts.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.mlp.shared_experts.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.mlp.shared_experts.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.post_attention_layernorm.weight", {"BF16", {16}}},
      {"model.layers.1.self_attn.kv_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.1.self_attn.kv_a_proj_with_mqa.weight", {"F8_E4M3", {12, 16}}},
      {"model.layers.1.self_attn.kv_a_proj_with_mqa.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.self_attn.kv_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.self_attn.kv_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.self_attn.o_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.self_attn.o_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.self_attn.q_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.1.self_attn.q_a_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.1.self_attn.q_a_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.1.self_attn.q_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.1.self_attn.q_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.eh_proj.weight", {"BF16", {16, 32}}},
      {"model.layers.2.embed_tokens.weight", {"BF16", {40, 16}}},
      {"model.layers.2.enorm.weight", {"BF16", {16}}},
      {"model.layers.2.hnorm.weight", {"BF16", {16}}},
      {"model.layers.2.input_layernorm.weight", {"BF16", {16}}},
      {"model.layers.2.mlp.experts.0.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.mlp.experts.0.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.experts.0.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.experts.0.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.experts.0.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.experts.0.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.experts.1.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.mlp.experts.1.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.experts.1.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.experts.1.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.experts.1.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.experts.1.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.gate.e_score_correction_bias", {"F32", {2}}},
      {"model.layers.2.mlp.gate.weight", {"BF16", {2, 16}}},
      {"model.layers.2.mlp.shared_experts.down_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.mlp.shared_experts.down_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.shared_experts.gate_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.shared_experts.gate_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.mlp.shared_experts.up_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.mlp.shared_experts.up_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.post_attention_layernorm.weight", {"BF16", {16}}},
      {"model.layers.2.self_attn.kv_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.2.self_attn.kv_a_proj_with_mqa.weight", {"F8_E4M3", {12, 16}}},
      {"model.layers.2.self_attn.kv_a_proj_with_mqa.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.self_attn.kv_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.self_attn.kv_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.self_attn.o_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.self_attn.o_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.self_attn.q_a_layernorm.weight", {"BF16", {8}}},
      {"model.layers.2.self_attn.q_a_proj.weight", {"F8_E4M3", {8, 16}}},
      {"model.layers.2.self_attn.q_a_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.self_attn.q_b_proj.weight", {"F8_E4M3", {16, 8}}},
      {"model.layers.2.self_attn.q_b_proj.weight_scale_inv", {"F32", {1, 1}}},
      {"model.layers.2.shared_head.head.weight", {"BF16", {40, 16}}},
      {"model.layers.2.shared_head.norm.weight", {"BF16", {16}}},
      {"model.norm.weight", {"BF16", {16}}},
  };
  return tensors;
}

// The same for a BF16 export: no scales, BF16 weights.
std::map<std::string, Stored> release_bf16_tensors() {
  std::map<std::string, Stored> tensors;
  for (const auto& [name, stored] : release_fp8_tensors()) {
    if (name.ends_with("_scale_inv")) continue;
    tensors[name] = {stored.dtype == "F8_E4M3" ? "BF16" : stored.dtype, stored.shape};
  }
  return tensors;
}

std::map<std::string, Stored> exported_tensors(const HfDirectory& hf) {
  std::map<std::string, Stored> tensors;
  for (const std::string& name : hf.names()) {
    const SafetensorsEntry& entry = *hf.find(name);
    tensors[name] = {std::string(safetensors_dtype_name(entry.dtype)), entry.shape};
  }
  return tensors;
}

void expect_tensors(const std::map<std::string, Stored>& actual, const std::map<std::string, Stored>& expected) {
  std::set<std::string> actual_names, expected_names;
  for (const auto& [name, stored] : actual) actual_names.insert(name);
  for (const auto& [name, stored] : expected) expected_names.insert(name);
  ASSERT_EQ(actual_names, expected_names);
  for (const auto& [name, stored] : expected) {
    EXPECT_EQ(actual.at(name).dtype, stored.dtype) << name;
    EXPECT_EQ(actual.at(name).shape, stored.shape) << name;
  }
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_whole_file(path, 1 << 24)); }

class HfExportLayoutTest : public ::testing::Test {
 protected:
  std::string export_dir(const std::vector<std::string>& overrides, const HfExportOptions& options) {
    Config config = testing::tiny_hf_config(dir_.str(), overrides);
    testing::CheckpointContents contents;
    testing::write_trainer_checkpoint(dir_ / "ckpt", config, 3, 12, false, contents);
    std::string out = dir_ / "hf";
    export_hf(dir_ / "ckpt", out, options);
    return out;
  }

  ScratchDir dir_;
};

TEST_F(HfExportLayoutTest, Fp8NamesShapesAndDtypesAreTheReleases) {
  std::string out = export_dir({}, {.dtype = HfDtype::fp8});
  expect_tensors(exported_tensors(HfDirectory(out)), release_fp8_tensors());
}

TEST_F(HfExportLayoutTest, Bf16NamesShapesAndDtypesAreTheReleases) {
  std::string out = export_dir({}, {.dtype = HfDtype::bf16});
  expect_tensors(exported_tensors(HfDirectory(out)), release_bf16_tensors());
}

TEST_F(HfExportLayoutTest, ShardsAndIndex) {
  // 3000 bytes per shard: the tiny model's fp8 export takes several shards; the 40x16 BF16 embedding (1280 bytes)
  // fits, so every shard holds whole tensors and stays under the limit unless one tensor alone exceeds it.
  std::string out = export_dir({}, {.dtype = HfDtype::fp8, .shard_bytes = 3000});
  std::vector<std::string> files = list_directory(out);
  std::vector<std::string> shards;
  for (const std::string& file : files) {
    if (file.ends_with(".safetensors")) shards.push_back(file);
  }
  ASSERT_GT(shards.size(), 2u);
  std::string count = fmt::format("{:05d}", shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    EXPECT_EQ(shards[i], fmt::format("model-{:05d}-of-{}.safetensors", i + 1, count));
  }
  EXPECT_EQ(files.size(), shards.size() + 2);  // + config.json and the index

  nlohmann::json index = read_json(out + "/model.safetensors.index.json");
  uint64_t total = 0;
  std::map<std::string, std::string> holder;
  for (const std::string& shard : shards) {
    SafetensorsFile file(out + "/" + shard);
    uint64_t shard_bytes = 0;
    for (const SafetensorsEntry& entry : file.tensors()) {
      holder[entry.name] = shard;
      shard_bytes += entry.bytes();
    }
    EXPECT_LE(shard_bytes, 3000u) << shard;
    total += shard_bytes;
  }
  EXPECT_EQ(index.at("metadata").at("total_size").get<uint64_t>(), total);
  using WeightMap = std::map<std::string, std::string>;
  EXPECT_EQ(index.at("weight_map").get<WeightMap>(), holder);
  // An fp8 weight and its scale share a shard.
  EXPECT_EQ(holder.at("model.layers.0.mlp.gate_proj.weight"),
            holder.at("model.layers.0.mlp.gate_proj.weight_scale_inv"));
}

TEST_F(HfExportLayoutTest, ConfigJsonHasTheDeepseekV3FieldsWithYarn) {
  std::string out = export_dir({"model.max_seq_len=64", "model.rope.yarn.factor=4",
                                "model.rope.yarn.original_max_position=16", "model.rope.yarn.mscale=0.707"},
                               {.dtype = HfDtype::fp8});
  nlohmann::json config = read_json(out + "/config.json");
  nlohmann::json architectures = nlohmann::json::array({"DeepseekV3ForCausalLM"});
  EXPECT_EQ(config.at("architectures"), architectures);
  std::map<std::string, nlohmann::json> expected = {
      {"model_type", "deepseek_v3"}, {"vocab_size", 40}, {"hidden_size", 16}, {"intermediate_size", 160},
      {"moe_intermediate_size", 8}, {"num_hidden_layers", 2}, {"num_nextn_predict_layers", 1},
      {"num_attention_heads", 2}, {"num_key_value_heads", 2}, {"n_shared_experts", 1}, {"n_routed_experts", 2},
      {"routed_scaling_factor", 2.5}, {"kv_lora_rank", 8}, {"q_lora_rank", 8}, {"qk_rope_head_dim", 4},
      {"v_head_dim", 4}, {"qk_nope_head_dim", 4}, {"topk_method", "noaux_tc"}, {"n_group", 1}, {"topk_group", 1},
      {"num_experts_per_tok", 1}, {"first_k_dense_replace", 1}, {"norm_topk_prob", true},
      {"scoring_func", "sigmoid"}, {"hidden_act", "silu"}, {"max_position_embeddings", 64},
      {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}, {"tie_word_embeddings", false},
      {"torch_dtype", "bfloat16"}};
  for (const auto& [key, value] : expected) EXPECT_EQ(config.at(key), value) << key;
  nlohmann::json yarn = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16},
                         {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"mscale", 0.707}, {"mscale_all_dim", 0.707}};
  EXPECT_EQ(config.at("rope_scaling"), yarn);
  nlohmann::json quantization = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                 {"weight_block_size", nlohmann::json::array({128, 128})}};
  EXPECT_EQ(config.at("quantization_config"), quantization);
}

TEST_F(HfExportLayoutTest, ConfigJsonWithoutYarnOrFp8) {
  std::string out = export_dir({}, {.dtype = HfDtype::bf16});
  nlohmann::json config = read_json(out + "/config.json");
  EXPECT_TRUE(config.at("rope_scaling").is_null());  // max_seq_len 16 <= original_max_position 4096
  EXPECT_FALSE(config.contains("quantization_config"));
}

TEST_F(HfExportLayoutTest, RefusesANonEmptyOutputAndAMissingEma) {
  Config config = testing::tiny_hf_config(dir_.str());
  testing::CheckpointContents contents;
  testing::write_trainer_checkpoint(dir_ / "ckpt", config, 3, 12, false, contents);
  testing::expect_error([&] { export_hf(dir_ / "ckpt", dir_ / "hf", {.ema = true}); }, {"holds no EMA"});
  std::filesystem::create_directories(dir_ / "busy");
  testing::write_bytes(dir_ / "busy/file", {'x'});
  testing::expect_error([&] { export_hf(dir_ / "ckpt", dir_ / "busy", {}); }, {"busy", "not empty"});
}

}  // namespace
}  // namespace hai
