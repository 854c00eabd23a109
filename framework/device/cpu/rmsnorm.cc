#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <cmath>

#include "framework/device/cpu/float_elements.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {

namespace {

// out_row: [D] (and rounded_row: [D] bf16, or null: out_row's values rounded) <- row: [D], weight: [D]; returns the
// row's rstd.
template <typename Out>
float normalize_row(Out* out_row, bf16* rounded_row, const float* row, const float* weight, int64_t width,
                    float eps) {
  double sum_of_squares = 0;
  for (int64_t d = 0; d < width; ++d) sum_of_squares += static_cast<double>(row[d]) * row[d];
  double mean_square = width > 0 ? sum_of_squares / static_cast<double>(width) : 0.0;
  float r = static_cast<float>(1.0 / std::sqrt(mean_square + eps));
  for (int64_t d = 0; d < width; ++d) {
    float normed = row[d] * r * weight[d];
    store(out_row + d, normed);
    if (rounded_row) store(rounded_row + d, normed);
  }
  return r;
}

// out: [N, D] fp32 or bf16 (and out_bf16: [N, D] bf16 when defined), rstd: [N] <- the N rows row_of(n) gives
// ([D] each), weight: [D]
template <typename Out, typename RowOf>
void normalize_rows(const Tensor& out, const Tensor& out_bf16, const Tensor& rstd, const Tensor& weight, float eps,
                    RowOf row_of) {
  Out* output = out.data<Out>();
  bf16* rounded = out_bf16.defined() ? out_bf16.data<bf16>() : nullptr;
  float* inverse_rms = rstd.data<float>();
  const float* w = weight.data<float>();
  int64_t width = out.size(1);
  parallel_for(out.size(0), 4 * width, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      bf16* rounded_row = rounded ? rounded + n * width : nullptr;
      inverse_rms[n] = normalize_row(output + n * width, rounded_row, row_of(n), w, width, eps);
    }
  });
}

template <typename RowOf>
void normalize(const Tensor& out, const Tensor& out_bf16, const Tensor& rstd, const Tensor& weight, float eps,
               RowOf row_of) {
  if (out.dtype() == DType::bf16) return normalize_rows<bf16>(out, out_bf16, rstd, weight, eps, row_of);
  normalize_rows<float>(out, out_bf16, rstd, weight, eps, row_of);
}

}  // namespace

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps) {
  const float* input = x.data<float>();  // [N, D]
  int64_t width = x.size(1);
  normalize(out, Tensor(), rstd, weight, eps, [&](int64_t n) { return input + n * width; });
}

void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16) {
  float* sums = sum.data<float>();        // [N, D], may be a or b
  const float* first = a.data<float>();   // [N, D]
  const float* second = b.data<float>();  // [N, D]
  int64_t width = sum.size(1);
  normalize(out, out_bf16, rstd, weight, eps, [&](int64_t n) {
    float* row = sums + n * width;
    for (int64_t d = 0; d < width; ++d) row[d] = first[n * width + d] + second[n * width + d];
    return static_cast<const float*>(row);
  });
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options) {
  const float* input = x.data<float>();           // [N, D]
  const float* w = weight.data<float>();          // [D]
  const float* d_output = d_out.data<float>();    // [N, D]
  const float* inverse_rms = rstd.data<float>();  // [N]
  float* d_input = d_x.data<float>();             // [N, D]
  float* d_w = d_weight.data<float>();            // [D]
  // [N, D] added to d_x, or none; may be d_x itself (each element is read before it is written)
  const float* residual = options.residual_grad.defined() ? options.residual_grad.data<float>() : nullptr;
  bf16* rounded = options.d_x_bf16.defined() ? options.d_x_bf16.data<bf16>() : nullptr;  // [N, D] d_x, or none
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
      float gradient = static_cast<float>(r * (w[d] * d_row[d] - row[d] * correction));
      float value = residual ? gradient + residual[n * width + d] : gradient;
      d_input[n * width + d] = value;
      if (rounded) store(rounded + n * width + d, value);
      d_w[d] += static_cast<float>(d_row[d] * row[d] * r);
    }
  }
}

}  // namespace hai::cpu
