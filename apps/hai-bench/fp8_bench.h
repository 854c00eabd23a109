#pragma once
// FP8 benchmarks of the linear layers whose GEMMs run in FP8 under precision.mode fp8 (model_linears.h's fp8_gemm
// linears: attention's projections, the dense MLP and the shared expert) at T tokens, next to BF16, to tell where
// FP8 training time goes. Each linear runs the recipe of framework/device/fp8_gemm.h as model/linear.cc does:
//   gemm:            fp8_gemm alone, on operands quantised beforehand, vs gemm_bench's BF16 GEMM of the same pass;
//                    path says whether cuBLASLt ran it or the dequantise + fp32 GEMM fallback (awkward shapes);
//   quantize:        the activation quantisations the layer makes per micro-batch: x [T, in] and d_y [T, out] in
//                    1x128 tiles (forward, input_grad) and in 128x1 tiles written transposed (weight_grad);
//   layer:           hai::Linear's forward, backward_input, backward_weight with an FP8 weight copy vs the same
//                    layer in BF16, called as the model calls them (x fp32, d_y in the layer's output_grad_dtype);
//   weight_quantize: the weight's 128x128 quantisations, as stored and transposed (once per optimizer step).
// Inputs are standard normal draws, weights N(0, init_std), so the scales are realistic. GB/s counts the bytes
// read and written: fp32 in, e4m3 and fp32 scales out.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/config/config.h"

namespace hai::bench {

// {tokens, dtype, pow2_scales, linears: [{name, count, out, in,
//    gemm: {forward|input_grad|weight_grad: {path, fp8_ms, fp8_tflops, bf16_ms, bf16_tflops, fp8_over_bf16}},
//    quantize: {x_1x128|d_y_1x128|x_128x1_transposed|d_y_128x1_transposed: {ms, gbps}},
//    layer: {forward|input_grad|weight_grad: {fp8_ms, fp8_tflops, bf16_ms, bf16_tflops, fp8_over_bf16}},
//    weight_quantize: {128x128|128x128_transposed: {ms, gbps}}}...],
//  step: {gemm: {fp8_ms, ...}, layer: {fp8_ms, ...}, activation_quantize_ms, fp8_layer_other_ms, weight_quantize_ms}}
// where step sums count x each linear's passes and activation quantisations (one micro-batch of T tokens) and its
// weight quantisations (one optimizer step), and fp8_layer_other_ms is the FP8 layers' time outside their GEMMs
// and quantisations.
nlohmann::json benchmark_fp8_linears(const ModelConfig& model, int64_t tokens, bool pow2_scales,
                                     const TimingOptions& timing);

}  // namespace hai::bench
