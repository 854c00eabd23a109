#pragma once
// FP8 grouped expert GEMM benchmark (framework/device/grouped_gemm_fp8.h and grouped_gemm_fp8_weight_grad.h): the
// routed experts of a model at T tokens x K experts per token, rows spread unevenly over the experts
// (uneven_expert_rows: most experts' rows no multiple of 128), next to the BF16 grouped GEMM of the same shapes.
// Operands are quantised by the GPU ops from standard normal draws (weights N(0, init_std)), so scales are realistic.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/config/config.h"

namespace hai::bench {

// {experts, rows, padded_rows, projections: [{name, in, out,
//    forward: {kernel, fp8: {ms, tflops}, wgmma: {ms, tflops}, exact: {ms, tflops}, bf16: {ms, tflops},
//              fp8_over_bf16},
//    weight_grad: {kernel, fp8: ..., exact: ..., bf16: ..., fp8_over_bf16}}]}
// for gate_or_up (hidden -> expert_ffn_size) and down (expert_ffn_size -> hidden). fp8 is the op's own choice
// (kernel: tma, wgmma or exact), wgmma the wgmma kernel without TMA, exact the bit-exact SIMT kernel (3 calls);
// fp8_over_bf16 is fp8 ms / bf16 ms. FLOPs count the routed rows' products, not the padding's.
nlohmann::json benchmark_grouped_gemm_fp8(const ModelConfig& model, int64_t tokens, const TimingOptions& timing);

}  // namespace hai::bench
