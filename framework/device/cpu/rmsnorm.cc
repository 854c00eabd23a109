#include "framework/device/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include "framework/device/cpu/float_elements.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {

namespace {

template <typename Out>
void normalize_rows(Out* output, float* inverse_rms, const Tensor& x, const Tensor& weight, float eps) {
  const float* input = x.data<float>();   // [N, D]
  const float* w = weight.data<float>();  // [D]
  int64_t width = x.size(1);
  parallel_for(x.size(0), 4 * width, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* row = input + n * width;
      double sum_of_squares = 0;
      for (int64_t d = 0; d < width; ++d) sum_of_squares += static_cast<double>(row[d]) * row[d];
      double mean_square = width > 0 ? sum_of_squares / static_cast<double>(width) : 0.0;
      float r = static_cast<float>(1.0 / std::sqrt(mean_square + eps));
      inverse_rms[n] = r;
      for (int64_t d = 0; d < width; ++d) store(output + n * width + d, row[d] * r * w[d]);
    }
  });
}

}  // namespace

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps) {
  if (out.dtype() == DType::bf16) return normalize_rows(out.data<bf16>(), rstd.data<float>(), x, weight, eps);
  normalize_rows(out.data<float>(), rstd.data<float>(), x, weight, eps);  // [N, D], [N]
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options) {
  const float* input = x.data<float>();           // [N, D]
  const float* w = weight.data<float>();          // [D]
  const float* d_output = d_out.data<float>();    // [N, D]
  const float* inverse_rms = rstd.data<float>();  // [N]
  float* d_input = d_x.data<float>();             // [N, D]
  float* d_w = d_weight.data<float>();            // [D]
  int64_t width = x.size(1);
  // NOTE: the row sums are added into d_weight row by row; beta 0 starts them from zero, as zero_fill would.
  if (options.weight_grad_beta == 0.0f) std::fill(d_w, d_w + width, 0.0f);
  for (int64_t n = 0; n < x.size(0); ++n) {
    const float* row = input + n * width;
    const float* d_row = d_output + n * width;
    double r = inverse_rms[n];
    double projection = 0;  // sum_d weight * d_out * x
    for (int64_t d = 0; d < width; ++d) projection += static_cast<double>(w[d]) * d_row[d] * row[d];
    double correction = r * r * projection / static_cast<double>(width);
    for (int64_t d = 0; d < width; ++d) {
      d_input[n * width + d] = static_cast<float>(r * (w[d] * d_row[d] - row[d] * correction));
      d_w[d] += static_cast<float>(d_row[d] * row[d] * r);
    }
  }
}

}  // namespace hai::cpu
