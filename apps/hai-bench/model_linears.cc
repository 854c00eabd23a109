#include "apps/hai-bench/model_linears.h"

#include "model/parameters.h"

namespace hai::bench {
namespace {

// "model.layers.3.self_attn.q_a_proj.weight" -> "self_attn.q_a_proj"; other names lose only ".weight".
std::string linear_name(const std::string& parameter) {
  std::string name = parameter;
  const std::string layers = "model.layers.";
  if (name.rfind(layers, 0) == 0) name = name.substr(name.find('.', layers.size()) + 1);
  const std::string weight = ".weight";
  if (name.size() > weight.size() && name.compare(name.size() - weight.size(), weight.size(), weight) == 0) {
    name.resize(name.size() - weight.size());
  }
  return name;
}

}  // namespace

std::map<std::string, LinearShape> dense_linears(const ModelConfig& model) {
  std::map<std::string, LinearShape> linears;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    if (spec.shape.rank() != 2 || spec.group != ParameterGroup::dense || spec.name == "model.embed_tokens.weight") {
      continue;
    }
    LinearShape& shape = linears[linear_name(spec.name)];
    shape.out = spec.shape[0];
    shape.in = spec.shape[1];
    shape.fp8_gemm = spec.fp8_gemm;
    ++shape.count;
  }
  return linears;
}

}  // namespace hai::bench
