#pragma once
// The DeepSeek-V3 parameter list: every parameter of the model with its HF DeepSeek-V3 name, shape and group,
// exactly as docs/deepseek-v3.md names them (nn.Linear weights are [out, in]). MTP module k is stored as
// layer num_layers + k - 1; it shares the embedding and the output head with the main model, so those are
// declared once.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_spec.h"

namespace hai {

// Names of one decoder layer's parameters ("model.layers.{layer}.").
std::string layer_prefix(int64_t layer);
bool is_moe_layer(const ModelConfig& model, int64_t layer);

std::vector<ParameterSpec> deepseek_v3_parameters(const ModelConfig& model);

struct ParameterCounts {
  int64_t total = 0;      // main model (embedding, layers, final norm, head); MTP excluded
  int64_t activated = 0;  // of total, what one token uses: all but the routed experts it does not pick
  int64_t mtp = 0;        // the MTP modules' own parameters (shared embedding and head not counted again)
  int64_t embedding = 0;
};
ParameterCounts count_parameters(const ModelConfig& model);

// Training FLOPs per token (docs/architecture.md "Outputs"): 6 x activated matmul parameters (the output head included,
// the embedding lookup not; MTP modules and their second use of the head included) + 3 x layers x heads x
// seq_len x (d_qk + d_v) for causal attention forward and backward (MTP blocks counted as layers).
double training_flops_per_token(const ModelConfig& model, int64_t seq_len);

}  // namespace hai
