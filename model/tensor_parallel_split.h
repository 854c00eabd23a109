#pragma once
// How tensor parallelism splits each DeepSeek-V3 parameter (docs/design/tensor-parallel.md), decided here alone;
// rank_share.h turns it into the box each tp rank holds.
//   column-parallel (dim 0): q_b_proj and kv_b_proj by head, the dense MLP's and shared experts' gate_proj/up_proj
//   row-parallel (dim 1):    o_proj by head, the dense MLP's and shared experts' down_proj
//   vocabulary (dim 0):      model.embed_tokens.weight, lm_head.weight (tp_range pads a vocabulary tp does not divide)
//   replicated:              everything else (norms, q_a_proj, kv_a_proj_with_mqa, the router, routed experts (split
//                            over ep instead), MTP's eh_proj)

#include <cstdint>
#include <string>

#include "framework/config/config.h"

namespace hai {

struct TensorSplit {
  int dim = -1;         // the split dimension, -1: replicated
  int64_t unit = 1;     // rows (dim 0) or columns (dim 1) per split unit: a head's width, or 1
};

TensorSplit tensor_split(const ModelConfig& model, const std::string& name);

}  // namespace hai
