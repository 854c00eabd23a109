#include "model/gradient_buckets.h"

#include <charconv>

namespace hai {

int gradient_bucket(std::string_view parameter_name) {
  if (parameter_name == "model.norm.weight" || parameter_name == "lm_head.weight") return kHeadBucket;
  if (parameter_name == "model.embed_tokens.weight") return kEmbeddingBucket;
  constexpr std::string_view kLayers = "model.layers.";
  if (!parameter_name.starts_with(kLayers)) return kGradientsFinalAtEnd;
  std::string_view rest = parameter_name.substr(kLayers.size());
  int64_t layer = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (error != std::errc() || end == rest.data() + rest.size() || *end != '.') return kGradientsFinalAtEnd;
  return layer_bucket(layer);
}

bool reads_fp32_value(const ParameterSpec& spec) {
  return spec.shape.rank() == 1 || spec.name == "model.embed_tokens.weight" || spec.name.ends_with(".mlp.gate.weight");
}

}  // namespace hai
