#pragma once
// CUDA FP8 GEMM through cuBLASLt with block scales, the semantics of framework/device/fp8_gemm.h (operands already
// checked by the dispatcher).

#include "framework/device/fp8_gemm.h"

namespace hai::cuda {

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, Stream stream);

}  // namespace hai::cuda
