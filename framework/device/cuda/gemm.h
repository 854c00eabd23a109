#pragma once
// CUDA GEMM through cuBLASLt with the semantics of framework/device/gemm.h (operands already checked by the
// dispatcher). A and B must share one dtype (fp32: exact fp32 compute, no TF32; bf16, fp16:
// fp32 accumulation); C fp32.

#include "framework/device/gemm.h"

namespace hai::cuda {

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options, Stream stream);

}  // namespace hai::cuda
