#pragma once
// CPU reference of framework/device/fp8_gemm.h (operands already checked by the dispatcher): both operands
// dequantised exactly, then the fp32 GEMM.

#include "framework/device/fp8_gemm.h"

namespace hai::cpu {

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta);

}  // namespace hai::cpu
