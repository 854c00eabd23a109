#pragma once
// What a model declares about each of its parameters, before any memory exists: the global HF-style name, the
// global shape, which data-parallel group reduces its gradient, whether weight decay applies, and how it is
// initialised. The same list drives allocation, initialisation, --dry-run counts, ZeRO-1 sharding and checkpoints.

#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// Dense parameters reduce over the data-parallel group; expert parameters over the expert-data-parallel group.
enum class ParameterGroup { dense, expert };

enum class ParameterInit {
  normal,  // N(0, init_std)
  ones,    // norm weights
  zeros,   // biases
};

struct ParameterSpec {
  std::string name;  // e.g. "model.layers.3.mlp.experts.17.up_proj.weight"
  Shape shape;
  ParameterGroup group = ParameterGroup::dense;
  ParameterInit init = ParameterInit::normal;
  bool weight_decay = true;  // false for norms and biases
  // false for state that is not trained by gradients (the routing bias of auxiliary-loss-free balancing): no
  // gradient buffer, no optimizer state, still checkpointed.
  bool trainable = true;
  // true for the weight of a linear layer whose GEMMs run in FP8 under precision.mode fp8 (attention's and the
  // MLPs' projections): the store keeps it quantised in 128x128 blocks too (parameter_store.h).
  bool fp8_gemm = false;
  // With fp8_gemm: under precision.mode fp8 nothing reads the compute copy, only the FP8 copies (the routed
  // experts: forward and input gradient read those, the weight gradient reads no weight), so the store keeps none.
  bool fp8_only = false;
};

int64_t total_numel(const std::vector<ParameterSpec>& specs);

}  // namespace hai
