#pragma once
// CPU reference of framework/device/swiglu.h (operands already checked by the dispatcher).

#include "framework/device/swiglu_rows.h"
#include "framework/tensor/tensor.h"

namespace hai::cpu {

// out: [rows, width] <- gate, up: rows of `width` elements rows.input_stride apart (separate [N, F] tensors, or the
// two halves of one [N, 2F]).
void swiglu_forward(const Tensor& out, const void* gate, const void* up, DType input_dtype, const SwigluRows& rows);

// d_gate, d_up (rows.gradient_stride apart) <- d_out: [rows, width] fp32, gate, up as swiglu_forward's.
void swiglu_backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const void* gate,
                     const void* up, DType input_dtype, const SwigluRows& rows);

}  // namespace hai::cpu
