#pragma once
// CPU reference of framework/device/gemm.h (operands already checked by the dispatcher).

#include "framework/device/gemm.h"

namespace hai::cpu {

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options);

}  // namespace hai::cpu
