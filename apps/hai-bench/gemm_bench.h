#pragma once
// GEMM benchmarks: every dense linear layer of a model (nn.Linear [out, in] weights; the routed experts are the
// grouped GEMM's) at T tokens, forward, input gradient and weight gradient, in BF16 with fp32 accumulation and
// output, and a square 8192^3 GEMM as the cuBLASLt ceiling.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "apps/hai-bench/model_linears.h"
#include "framework/config/config.h"

namespace hai::bench {

// {"linears": [{name, count, out, in, forward|input_grad|weight_grad: {ms, tflops}}...], "step": {ms, tflops}}
// where count is how many layers share that linear and step sums count x the three passes.
nlohmann::json benchmark_model_gemms(const ModelConfig& model, int64_t tokens, const TimingOptions& timing);

// {forward|input_grad|weight_grad: {ms, tflops}} of one linear at T tokens: forward y = x W^T, input gradient
// dx = dy W, weight gradient dW += dy^T x.
nlohmann::json benchmark_linear_gemms(const LinearShape& shape, int64_t tokens, const TimingOptions& timing);

// {m, n, k, ms, tflops} of C [n, n] fp32 = A [n, n] bf16 @ B [n, n]^T bf16.
nlohmann::json benchmark_square_gemm(int64_t n, const TimingOptions& timing);

}  // namespace hai::bench
