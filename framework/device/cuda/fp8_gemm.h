#pragma once
// CUDA FP8 GEMM through cuBLASLt with block scales, the semantics of framework/device/fp8_gemm.h (operands already
// checked by the dispatcher).

#include "framework/device/fp8_gemm.h"

namespace hai::cuda {

// Whether cuBLASLt's block-scaled FP8 GEMM takes C [m, n] with inner dimension k: m and n multiples of 16 (a k that
// is not a multiple of 128 is zero-padded to one).
bool fp8_gemm_supported(int64_t m, int64_t n, int64_t k);

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, Stream stream);

}  // namespace hai::cuda
