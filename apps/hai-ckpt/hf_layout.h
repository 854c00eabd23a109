#pragma once
// The tensors of an HF DeepSeek-V3 checkpoint for a model config, named and stored as in the released weights
// (deepseek-ai/DeepSeek-V3): every hai-train parameter under its own (HF) name, plus, for MTP module k (layer
// num_layers + k - 1), its own copies `model.layers.{L}.embed_tokens.weight` and
// `model.layers.{L}.shared_head.head.weight` of the shared embedding and output head.
//
// Storage: `bf16` stores every tensor as BF16; `fp8` stores the weights of attention's and the MLPs' linear layers
// (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj; gate/up/down_proj of dense layers, shared and routed
// experts; not the MoE gate, not eh_proj, as released) as F8_E4M3 with a `<name>_scale_inv` F32 tensor
// [ceil(out / 128), ceil(in / 128)], one dequantisation scale per 128x128 block, and everything else as BF16. In
// both, the routing bias `e_score_correction_bias` stays F32 (as released: its per-step updates are far below
// BF16's resolution).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework/config/config.h"
#include "framework/core/dtype.h"

namespace hai {

enum class HfDtype { bf16, fp8 };

// "bf16" | "fp8"; throws hai::Error otherwise.
HfDtype parse_hf_dtype(std::string_view name);

enum class HfStorage {
  bf16,
  f32,
  fp8_blocks,  // F8_E4M3 plus `<name>_scale_inv`
};

struct HfTensor {
  std::string name;    // the HF name
  std::string source;  // the hai-train parameter it holds (the same name, except for the MTP copies)
  std::vector<int64_t> shape;
  HfStorage storage = HfStorage::bf16;
};

std::vector<HfTensor> hf_tensors(const ModelConfig& model, HfDtype dtype);

// The name of an fp8 weight's scale tensor: "<name>_scale_inv".
std::string hf_scale_name(const std::string& weight_name);
// The shape of an fp8 weight's scale tensor: [ceil(out / 128), ceil(in / 128)].
std::vector<int64_t> hf_scale_shape(const std::vector<int64_t>& weight_shape);

// What the tensor takes in a file: its bytes, and its scale's for fp8.
uint64_t hf_stored_bytes(const HfTensor& tensor);

}  // namespace hai
