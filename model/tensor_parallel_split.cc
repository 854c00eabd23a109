#include "model/tensor_parallel_split.h"

#include <string_view>

namespace hai {
namespace {

bool ends_with_any(const std::string& name, std::initializer_list<std::string_view> endings) {
  for (std::string_view ending : endings) {
    if (name.ends_with(ending)) return true;
  }
  return false;
}

}  // namespace

TensorSplit tensor_split(const ModelConfig& model, const std::string& name) {
  if (name.ends_with(".self_attn.q_b_proj.weight")) {
    return {.dim = 0, .unit = model.qk_nope_head_dim + model.qk_rope_head_dim};
  }
  if (name.ends_with(".self_attn.kv_b_proj.weight")) {
    return {.dim = 0, .unit = model.qk_nope_head_dim + model.v_head_dim};
  }
  if (name.ends_with(".self_attn.o_proj.weight")) return {.dim = 1, .unit = model.v_head_dim};
  // NOTE: ".mlp." and ".mlp.shared_experts." directly before the name: routed experts ("mlp.experts.N.") stay whole.
  if (ends_with_any(name, {".mlp.gate_proj.weight", ".mlp.up_proj.weight", ".mlp.shared_experts.gate_proj.weight",
                           ".mlp.shared_experts.up_proj.weight"})) {
    return {.dim = 0, .unit = 1};
  }
  if (ends_with_any(name, {".mlp.down_proj.weight", ".mlp.shared_experts.down_proj.weight"})) {
    return {.dim = 1, .unit = 1};
  }
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return {.dim = 0, .unit = 1};
  return {};
}

}  // namespace hai
