#include "model/parameters.h"

#include <fmt/format.h>

namespace hai {
namespace {

void add(std::vector<ParameterSpec>& specs, std::string name, Shape shape,
         ParameterGroup group = ParameterGroup::dense) {
  specs.push_back({std::move(name), shape, group, ParameterInit::normal, true, true});
}

// The weight of a linear layer whose GEMMs run in FP8 under precision.mode fp8 (attention's and the MLPs'
// projections; the MoE gate, embedding, output head and MTP eh_proj stay in higher precision), and then without a
// compute copy (fp8_only: model/linear.h reads only the FP8 copies).
void add_fp8_linear(std::vector<ParameterSpec>& specs, std::string name, Shape shape) {
  add(specs, std::move(name), shape);
  specs.back().fp8_gemm = true;
  specs.back().fp8_only = true;
}

void add_norm(std::vector<ParameterSpec>& specs, std::string name, int64_t size) {
  specs.push_back({std::move(name), Shape{size}, ParameterGroup::dense, ParameterInit::ones, false, true});
}

void add_attention(std::vector<ParameterSpec>& specs, const ModelConfig& m, const std::string& prefix) {
  int64_t qk_head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  std::string attn = prefix + "self_attn.";
  add_fp8_linear(specs, attn + "q_a_proj.weight", {m.q_lora_rank, m.hidden_size});
  add_norm(specs, attn + "q_a_layernorm.weight", m.q_lora_rank);
  add_fp8_linear(specs, attn + "q_b_proj.weight", {m.num_heads * qk_head_dim, m.q_lora_rank});
  add_fp8_linear(specs, attn + "kv_a_proj_with_mqa.weight", {m.kv_lora_rank + m.qk_rope_head_dim, m.hidden_size});
  add_norm(specs, attn + "kv_a_layernorm.weight", m.kv_lora_rank);
  add_fp8_linear(specs, attn + "kv_b_proj.weight",
                 {m.num_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank});
  add_fp8_linear(specs, attn + "o_proj.weight", {m.hidden_size, m.num_heads * m.v_head_dim});
}

void add_ffn(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t hidden, int64_t ffn) {
  add_fp8_linear(specs, prefix + "gate_proj.weight", {ffn, hidden});
  add_fp8_linear(specs, prefix + "up_proj.weight", {ffn, hidden});
  add_fp8_linear(specs, prefix + "down_proj.weight", {hidden, ffn});
}

// A routed expert's weight: an FP8 copy under precision.mode fp8 and then no compute copy (fp8_only: the grouped FP8
// GEMMs of the forward and input gradient read the FP8 copies, the bf16 weight gradient reads no weight).
void add_routed_expert_weight(std::vector<ParameterSpec>& specs, std::string name, Shape shape) {
  add(specs, std::move(name), shape, ParameterGroup::expert);
  specs.back().fp8_gemm = true;
  specs.back().fp8_only = true;
}

void add_routed_expert(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t hidden, int64_t ffn) {
  add_routed_expert_weight(specs, prefix + "gate_proj.weight", {ffn, hidden});
  add_routed_expert_weight(specs, prefix + "up_proj.weight", {ffn, hidden});
  add_routed_expert_weight(specs, prefix + "down_proj.weight", {hidden, ffn});
}

void add_moe(std::vector<ParameterSpec>& specs, const ModelConfig& m, const std::string& prefix) {
  const MoeConfig& moe = m.moe;
  add(specs, prefix + "mlp.gate.weight", {moe.routed_experts, m.hidden_size});
  specs.push_back({prefix + "mlp.gate.e_score_correction_bias", Shape{moe.routed_experts}, ParameterGroup::dense,
                   ParameterInit::zeros, false, false});
  for (int64_t expert = 0; expert < moe.routed_experts; ++expert) {
    add_routed_expert(specs, fmt::format("{}mlp.experts.{}.", prefix, expert), m.hidden_size, moe.expert_ffn_size);
  }
  if (moe.shared_experts > 0) {
    add_ffn(specs, prefix + "mlp.shared_experts.", m.hidden_size, moe.expert_ffn_size * moe.shared_experts);
  }
}

void add_decoder_layer(std::vector<ParameterSpec>& specs, const ModelConfig& m, int64_t layer) {
  std::string prefix = layer_prefix(layer);
  add_norm(specs, prefix + "input_layernorm.weight", m.hidden_size);
  add_attention(specs, m, prefix);
  add_norm(specs, prefix + "post_attention_layernorm.weight", m.hidden_size);
  if (is_moe_layer(m, layer)) {
    add_moe(specs, m, prefix);
  } else {
    add_ffn(specs, prefix + "mlp.", m.hidden_size, m.dense_ffn_size);
  }
}

void add_mtp_module(std::vector<ParameterSpec>& specs, const ModelConfig& m, int64_t layer) {
  std::string prefix = layer_prefix(layer);
  add_norm(specs, prefix + "enorm.weight", m.hidden_size);
  add_norm(specs, prefix + "hnorm.weight", m.hidden_size);
  add(specs, prefix + "eh_proj.weight", {m.hidden_size, 2 * m.hidden_size});
  add_decoder_layer(specs, m, layer);
  add_norm(specs, prefix + "shared_head.norm.weight", m.hidden_size);
}

bool is_matmul_weight(const ParameterSpec& spec) {
  return spec.shape.rank() == 2 && spec.name != "model.embed_tokens.weight";
}

int64_t routed_expert_numel(const ModelConfig& m) { return 3 * m.hidden_size * m.moe.expert_ffn_size; }

std::vector<ParameterSpec> main_model_parameters(const ModelConfig& m) {
  std::vector<ParameterSpec> specs;
  add(specs, "model.embed_tokens.weight", {m.vocab_size, m.hidden_size});
  for (int64_t layer = 0; layer < m.num_layers; ++layer) add_decoder_layer(specs, m, layer);
  add_norm(specs, "model.norm.weight", m.hidden_size);
  add(specs, "lm_head.weight", {m.vocab_size, m.hidden_size});
  return specs;
}

std::vector<ParameterSpec> mtp_parameters(const ModelConfig& m) {
  std::vector<ParameterSpec> specs;
  for (int64_t depth = 1; depth <= m.mtp_depth; ++depth) add_mtp_module(specs, m, m.num_layers + depth - 1);
  return specs;
}

}  // namespace

std::string layer_prefix(int64_t layer) { return fmt::format("model.layers.{}.", layer); }

bool is_moe_layer(const ModelConfig& model, int64_t layer) { return layer >= model.first_dense_layers; }

std::vector<ParameterSpec> deepseek_v3_parameters(const ModelConfig& m) {
  std::vector<ParameterSpec> specs = main_model_parameters(m);
  std::vector<ParameterSpec> mtp = mtp_parameters(m);
  specs.insert(specs.end(), std::make_move_iterator(mtp.begin()), std::make_move_iterator(mtp.end()));
  return specs;
}

ParameterCounts count_parameters(const ModelConfig& m) {
  ParameterCounts counts;
  counts.total = total_numel(main_model_parameters(m));
  counts.mtp = total_numel(mtp_parameters(m));
  counts.embedding = m.vocab_size * m.hidden_size;
  int64_t moe_layers = m.num_layers - m.first_dense_layers;
  int64_t unused_experts = m.moe.routed_experts - m.moe.experts_per_token;
  counts.activated = counts.total - moe_layers * unused_experts * routed_expert_numel(m);
  return counts;
}

double training_flops_per_token(const ModelConfig& m, int64_t seq_len) {
  double matmul = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(m)) {
    if (is_matmul_weight(spec)) matmul += static_cast<double>(spec.shape.numel());
  }
  int64_t blocks = m.num_layers + m.mtp_depth;
  int64_t moe_blocks = blocks - m.first_dense_layers;
  matmul -= static_cast<double>(moe_blocks) * static_cast<double>(m.moe.routed_experts - m.moe.experts_per_token) *
            static_cast<double>(routed_expert_numel(m));
  matmul += static_cast<double>(m.mtp_depth) * static_cast<double>(m.vocab_size * m.hidden_size);  // head reused
  double attention = 3.0 * static_cast<double>(blocks) * static_cast<double>(m.num_heads) *
                     static_cast<double>(seq_len) *
                     static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim);
  return 6.0 * matmul + attention;
}

}  // namespace hai
