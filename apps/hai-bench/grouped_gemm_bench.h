#pragma once
// Grouped expert GEMM benchmark (framework/device/grouped_gemm.h): the routed experts of a model at T tokens x K
// experts per token, rows spread evenly over the experts, BF16 inputs and fp32 outputs.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/config/config.h"

namespace hai::bench {

// {experts, rows, projections: [{name, in, out, forward|input_grad|input_grad_add|weight_grad: {ms, tflops}}]}
// (input_grad_add: the input gradient added to d_x, beta 1) for the experts'
// hidden -> expert_ffn_size (gate and up) and expert_ffn_size -> hidden (down) projections.
nlohmann::json benchmark_grouped_gemm(const ModelConfig& model, int64_t tokens, const TimingOptions& timing);

}  // namespace hai::bench
