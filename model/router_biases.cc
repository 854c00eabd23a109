#include "model/router_biases.h"

#include <string>
#include <unordered_map>

#include "framework/device/expert_load.h"
#include "model/parameters.h"

namespace hai {

std::vector<int64_t> moe_block_indices(const ModelConfig& model) {
  std::vector<int64_t> blocks;
  for (int64_t layer = 0; layer < model.num_layers + model.mtp_depth; ++layer) {
    if (is_moe_layer(model, layer)) blocks.push_back(layer);
  }
  return blocks;
}

void update_router_biases(const ModelConfig& model, const ParameterStore& store, const Tensor& expert_load,
                          float gamma, const Tensor& update_scale) {
  std::vector<int64_t> blocks = moe_block_indices(model);
  check_shape(expert_load, Shape{static_cast<int64_t>(blocks.size()), model.moe.routed_experts}, "expert load");
  std::unordered_map<std::string, int64_t> row_of;  // bias name -> row of expert_load
  for (size_t row = 0; row < blocks.size(); ++row) {
    row_of[layer_prefix(blocks[row]) + "mlp.gate.e_score_correction_bias"] = static_cast<int64_t>(row);
  }
  for (const Parameter& parameter : store.parameters()) {
    auto found = row_of.find(parameter.spec.name);
    if (found == row_of.end()) continue;
    Tensor load = expert_load.slice(found->second, found->second + 1).reshape(Shape{model.moe.routed_experts});
    update_router_bias(parameter.value, load, gamma, update_scale);
  }
}

}  // namespace hai
