#include "apps/hai-ckpt/hf_config.h"

namespace hai {
namespace {

// YaRN is on when the model's context exceeds the original one (framework/device/rope_table.h). hai-train has one
// mscale for the softmax scale and unscaled cos/sin, which HF spells mscale == mscale_all_dim.
nlohmann::ordered_json rope_scaling(const ModelConfig& model) {
  const YarnConfig& yarn = model.rope.yarn;
  if (model.max_seq_len <= yarn.original_max_position) return nullptr;
  return {{"type", "yarn"},
          {"factor", yarn.factor},
          {"original_max_position_embeddings", yarn.original_max_position},
          {"beta_fast", yarn.beta_fast},
          {"beta_slow", yarn.beta_slow},
          {"mscale", yarn.mscale},
          {"mscale_all_dim", yarn.mscale}};
}

}  // namespace

nlohmann::ordered_json hf_config_json(const ModelConfig& model, HfDtype dtype) {
  const MoeConfig& moe = model.moe;
  nlohmann::ordered_json config = {
      {"architectures", {"DeepseekV3ForCausalLM"}},
      {"model_type", "deepseek_v3"},
      {"vocab_size", model.vocab_size},
      {"hidden_size", model.hidden_size},
      {"intermediate_size", model.dense_ffn_size},
      {"moe_intermediate_size", moe.expert_ffn_size},
      {"num_hidden_layers", model.num_layers},
      {"num_nextn_predict_layers", model.mtp_depth},
      {"num_attention_heads", model.num_heads},
      {"num_key_value_heads", model.num_heads},
      {"n_shared_experts", moe.shared_experts},
      {"n_routed_experts", moe.routed_experts},
      {"routed_scaling_factor", moe.routed_scaling_factor},
      {"kv_lora_rank", model.kv_lora_rank},
      {"q_lora_rank", model.q_lora_rank},
      {"qk_rope_head_dim", model.qk_rope_head_dim},
      {"v_head_dim", model.v_head_dim},
      {"qk_nope_head_dim", model.qk_nope_head_dim},
      {"topk_method", "noaux_tc"},
      {"n_group", moe.groups},
      {"topk_group", moe.groups_per_token},
      {"num_experts_per_tok", moe.experts_per_token},
      {"moe_layer_freq", 1},
      {"first_k_dense_replace", model.first_dense_layers},
      {"norm_topk_prob", true},
      {"scoring_func", "sigmoid"},
      {"aux_loss_alpha", moe.balance_loss_alpha},
      {"seq_aux", true},
      {"hidden_act", "silu"},
      {"max_position_embeddings", model.max_seq_len},
      {"initializer_range", model.init_std},
      {"rms_norm_eps", model.norm_eps},
      {"rope_theta", model.rope.theta},
      {"rope_scaling", rope_scaling(model)},
      {"attention_bias", false},
      {"attention_dropout", 0.0},
      {"tie_word_embeddings", false},
      {"use_cache", true},
      {"torch_dtype", "bfloat16"},
  };
  if (dtype == HfDtype::fp8) {
    config["quantization_config"] = {{"quant_method", "fp8"},
                                     {"fmt", "e4m3"},
                                     {"activation_scheme", "dynamic"},
                                     {"weight_block_size", {128, 128}}};
  }
  return config;
}

}  // namespace hai
