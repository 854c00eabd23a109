#pragma once
// CUDA implementation of framework/device/grouped_gemm.h (operands already checked by the dispatcher). The expert
// offsets stay on the device: each block finds its expert there, so nothing waits for the host.

#include "framework/device/grouped_gemm.h"

namespace hai::cuda {

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options, Stream stream);
void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta, Stream stream);

}  // namespace hai::cuda
