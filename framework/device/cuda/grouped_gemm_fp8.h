#pragma once
// CUDA implementation of framework/device/grouped_gemm_fp8.h (operands already checked by the dispatcher). The
// expert offsets stay on the device: each block finds its expert there.

#include "framework/device/grouped_gemm_fp8.h"

namespace hai::cuda {

// Which kernel runs: the first that fits of tma, wgmma and exact (automatic, the op's choice), or one asked for by
// a test: tma and wgmma throw where they cannot run; exact runs anywhere.
enum class GroupedGemmFp8Kernel { automatic, tma, wgmma, exact };

void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta, Stream stream,
                      GroupedGemmFp8Kernel kernel = GroupedGemmFp8Kernel::automatic);

// Whether the wgmma (or the TMA) kernel can run these operands on the current device (an sm_90a build on a 9.x
// device, and the shapes and alignments of grouped_gemm_fp8_kernels.h).
bool grouped_gemm_fp8_wgmma_fits(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights);
bool grouped_gemm_fp8_tma_fits(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights);

}  // namespace hai::cuda
