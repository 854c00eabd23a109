#pragma once
// Auxiliary-loss-free balancing over the MoE blocks a store holds: the rows of an expert load and the update of the
// routing biases (e_score_correction_bias) of the blocks present, so that a pipeline rank moves the biases of its
// own stages' layers.

#include <cstdint>
#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_store.h"

namespace hai {

// The MoE blocks (layer indices as in the HF names, MTP blocks numbered on from num_layers), in order: the rows of
// an expert load [moe blocks, E] (DeepseekV3Model::expert_load).
std::vector<int64_t> moe_block_indices(const ModelConfig& model);

// Each routing bias the store holds += gamma * sign(mean load - load) with its row of expert_load ([moe blocks, E]
// i32 on the store's device), unless update_scale (the optimizer's [1] fp32 factor, framework/device/grad_clip.h)
// is NaN.
void update_router_biases(const ModelConfig& model, const ParameterStore& store, const Tensor& expert_load,
                          float gamma, const Tensor& update_scale = {});

}  // namespace hai
