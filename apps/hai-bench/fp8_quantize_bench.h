#pragma once
// FP8 activation quantisation benchmarks at a model's shapes (T tokens, R = T x experts per token routed rows), on
// bf16 inputs of standard normal draws:
//   rows_and_columns: quantize_1x128_and_128x1_transposed (an FP8 linear layer's input, both operands in one pass)
//                     against quantize_1x128 and quantize_128x1_transposed apart, at [T, hidden] and
//                     [R, expert_ffn_size];
//   expert_tokens:    pad_expert_offsets, quantize_expert_tokens (the routed experts' weight-gradient operands) and
//                     quantize_rows_and_expert_tokens (rows and tokens of one output gradient in one pass) against
//                     quantize_128x1_transposed of the same rows and quantize_1x128 + quantize_expert_tokens apart,
//                     at [R, hidden] and [R, expert_ffn_size] with rows spread unevenly over the experts.
// GB/s counts the bytes each op must move: bf16 read once, e4m3 and fp32 scales written.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/config/config.h"

namespace hai::bench {

// {rows_and_columns: [{shape, one_pass: {ms, gbps}, rows: {ms, gbps}, columns: {ms, gbps}, separate_over_one_pass}],
//  expert_tokens: [{shape, experts, padded_rows, padding_ms, tokens: {ms, gbps}, plain_128x1_transposed: {ms, gbps},
//                   rows_and_tokens: {ms, gbps}, rows: {ms, gbps}, separate_over_one_pass}]}
nlohmann::json benchmark_fp8_quantize(const ModelConfig& model, int64_t tokens, const TimingOptions& timing);

}  // namespace hai::bench
