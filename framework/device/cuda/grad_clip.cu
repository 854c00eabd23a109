#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

__global__ void update_scale_kernel(float* scale, double* norm, const double* squared_norms, int64_t entries,
                                    int64_t mean_over, double max_norm, double loss_scale) {
  double rank_count = static_cast<double>(mean_over);
  double squared = 0.0;
  for (int64_t r = 0; r < entries; ++r) {
    squared = __dadd_rn(squared, __ddiv_rn(squared_norms[r], rank_count * rank_count));
  }
  double unscaled_norm = __ddiv_rn(__dsqrt_rn(squared), loss_scale);
  *norm = unscaled_norm;
  if (!isfinite(unscaled_norm)) {
    *scale = __int_as_float(0x7fc00000);  // quiet NaN: the step is skipped
    return;
  }
  double factor = max_norm == 0.0 ? 1.0 : fmin(1.0, __ddiv_rn(max_norm, __dadd_rn(unscaled_norm, 1e-6)));
  *scale = __fdiv_rn(__double2float_rn(__ddiv_rn(factor, loss_scale)), static_cast<float>(rank_count));
}

}  // namespace

cudaError_t gradient_update_scale(float* scale, double* norm, const double* squared_norms, int64_t entries,
                                  int64_t mean_over, double max_norm, double loss_scale, cudaStream_t stream) {
  update_scale_kernel<<<1, 1, 0, stream>>>(scale, norm, squared_norms, entries, mean_over, max_norm, loss_scale);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
