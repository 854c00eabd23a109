#pragma once
// The parameters one rank of an expert-parallel group holds (docs/design/expert-parallel.md): every dense
// parameter of the model and the routed experts of its share, [ep_rank * E / ep, (ep_rank + 1) * E / ep) of every
// MoE layer (MTP blocks included). Names keep the global expert id ("model.layers.3.mlp.experts.17.up_proj.weight"),
// so checkpoints, which go by name, need no translation.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_spec.h"

namespace hai {

// The routed expert a parameter name belongs to ("model.layers.3.mlp.experts.17.up_proj.weight" -> 17), or -1.
int64_t routed_expert_of(const std::string& name);

// deepseek_v3_parameters(model) without the routed experts that other EP ranks own. ep divides routed_experts;
// ep_rank in [0, ep). At ep = 1 the whole list.
std::vector<ParameterSpec> expert_parallel_parameters(const ModelConfig& model, int ep_rank, int ep);

}  // namespace hai
