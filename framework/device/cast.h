#pragma once
// Element type conversion between the floating dtypes fp32, bf16 and fp16 (exact rounding of framework/core/dtype.h:
// to nearest, ties to even). Used for the compute copies of weights and the GEMM inputs of bf16/fp16 training.

#include "framework/tensor/tensor.h"

namespace hai {

// out: [any] of dtype fp32|bf16|fp16 <- x: [same numel] of dtype fp32|bf16|fp16. Equal dtypes copy.
void cast_tensor(const Tensor& out, const Tensor& x, Stream stream = {});

}  // namespace hai
