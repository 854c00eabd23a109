#include "apps/hai-ckpt/hf_layout.h"

#include "framework/core/error.h"
#include "framework/device/fp8_quantize.h"
#include "framework/tensor/tensor.h"
#include "model/parameters.h"

namespace hai {
namespace {

// The weights of attention's and the MLPs' linear layers. NOTE: eh_proj is a linear weight too, but the release
// keeps it in BF16, as it does the MoE gate.
bool is_fp8_linear(const std::string& name, const std::vector<int64_t>& shape) {
  bool in_block = name.find(".self_attn.") != std::string::npos || name.find(".mlp.") != std::string::npos;
  return shape.size() == 2 && in_block && !name.ends_with(".mlp.gate.weight");
}

HfStorage storage_of(const std::string& name, const std::vector<int64_t>& shape, HfDtype dtype) {
  if (name.ends_with(".e_score_correction_bias")) return HfStorage::f32;
  if (dtype == HfDtype::fp8 && is_fp8_linear(name, shape)) return HfStorage::fp8_blocks;
  return HfStorage::bf16;
}

}  // namespace

HfDtype parse_hf_dtype(std::string_view name) {
  if (name == "bf16") return HfDtype::bf16;
  if (name == "fp8") return HfDtype::fp8;
  HAI_THROW("export dtype '{}': expected bf16 or fp8", name);
}

std::vector<HfTensor> hf_tensors(const ModelConfig& model, HfDtype dtype) {
  std::vector<HfTensor> tensors;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    std::vector<int64_t> shape = spec.shape.to_vector();
    tensors.push_back({spec.name, spec.name, shape, storage_of(spec.name, shape, dtype)});
  }
  std::vector<int64_t> vocab_by_hidden = {model.vocab_size, model.hidden_size};
  for (int64_t depth = 1; depth <= model.mtp_depth; ++depth) {
    std::string prefix = layer_prefix(model.num_layers + depth - 1);
    tensors.push_back({prefix + "embed_tokens.weight", "model.embed_tokens.weight", vocab_by_hidden, HfStorage::bf16});
    tensors.push_back({prefix + "shared_head.head.weight", "lm_head.weight", vocab_by_hidden, HfStorage::bf16});
  }
  return tensors;
}

std::string hf_scale_name(const std::string& weight_name) { return weight_name + "_scale_inv"; }

std::vector<int64_t> hf_scale_shape(const std::vector<int64_t>& weight_shape) {
  HAI_CHECK(weight_shape.size() == 2, "an fp8 weight is 2-D, not of rank {}", weight_shape.size());
  return {(weight_shape[0] + kFp8TileSize - 1) / kFp8TileSize, (weight_shape[1] + kFp8TileSize - 1) / kFp8TileSize};
}

uint64_t hf_stored_bytes(const HfTensor& tensor) {
  int64_t numel = Shape(tensor.shape).numel();
  switch (tensor.storage) {
    case HfStorage::bf16: return static_cast<uint64_t>(numel) * 2;
    case HfStorage::f32: return static_cast<uint64_t>(numel) * 4;
    case HfStorage::fp8_blocks: return static_cast<uint64_t>(numel + 4 * Shape(hf_scale_shape(tensor.shape)).numel());
  }
  HAI_THROW("unknown HF storage");
}

}  // namespace hai
