#pragma once
// Launcher of the one-thread kernel behind framework/device/grad_clip.h: every operation is the CPU reference's,
// in the same order and with the same (IEEE round-to-nearest) rounding, so both give the same bits.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// scale [1], norm [1] <- squared_norms [entries], the sums over mean_over ranks.
cudaError_t gradient_update_scale(float* scale, double* norm, const double* squared_norms, int64_t entries,
                                  int64_t mean_over, double max_norm, double loss_scale, cudaStream_t stream);

}  // namespace hai::cuda::kernels
