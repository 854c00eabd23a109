#pragma once
// Launchers of the SwiGLU kernels behind framework/device/swiglu.h, each returning the launch's status. Every operand
// but d_out is fp32 or bf16 (its bits), as its SwigluElement says; gate and up share one. SwigluRows says where the
// elements sit (out and d_out [rows, width], gate, up, d_gate and d_up rows strided).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/device/swiglu_rows.h"

namespace hai::cuda::kernels {

enum class SwigluElement { f32, bf16 };

// out = silu(gate) * up
cudaError_t swiglu_forward(void* out, SwigluElement out_element, const void* gate, const void* up,
                           SwigluElement input_element, const SwigluRows& rows, cudaStream_t stream);

// out (bf16) = silu(gate) * up (bf16 [rows, cols]) rounded once, and those fp32 values quantised in 1x128 tiles:
// q [rows, cols] e4m3, scales [rows, ceil(cols / 128)] (fp8_quantize_kernels.h's rule).
cudaError_t swiglu_forward_fp8(void* out, uint8_t* q, float* scales, const void* gate, const void* up, int64_t rows,
                               int64_t cols, bool pow2_scales, cudaStream_t stream);

// d_gate = d_out * up * silu'(gate), d_up = d_out * silu(gate)
cudaError_t swiglu_backward(void* d_gate, void* d_up, SwigluElement gradient_element, const float* d_out,
                            const void* gate, const void* up, SwigluElement input_element, const SwigluRows& rows,
                            cudaStream_t stream);

}  // namespace hai::cuda::kernels
