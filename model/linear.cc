#include "model/linear.h"

#include "framework/device/cast.h"
#include "framework/device/gemm.h"

namespace hai {

OwnedTensor to_compute_dtype(const Tensor& x, DType dtype) {
  OwnedTensor converted(x.shape(), dtype, x.device());
  cast_tensor(converted, x);
  return converted;
}

template <typename Use>
void Linear::with_compute_dtype(const Tensor& x, Use&& use) const {
  if (x.dtype() == compute_dtype()) return use(x);  // fp32 training: no copy
  OwnedTensor converted = to_compute_dtype(x, compute_dtype());
  use(converted.tensor());
}

void Linear::forward(const Tensor& y, const Tensor& x, OwnedTensor& saved_input) const {
  saved_input = to_compute_dtype(x, compute_dtype());
  gemm(y, saved_input, weight_->compute, {.transpose_b = true});
}

void Linear::backward_input(const Tensor& d_x, const Tensor& d_y, bool accumulate) const {
  with_compute_dtype(d_y, [&](const Tensor& d_y_compute) {
    gemm(d_x, d_y_compute, weight_->compute, {.beta = accumulate ? 1.0f : 0.0f});
  });
}

void Linear::backward_weight(const Tensor& d_y, const Tensor& saved_input) const {
  with_compute_dtype(d_y, [&](const Tensor& d_y_compute) {
    gemm(weight_->grad, d_y_compute, saved_input, {.transpose_a = true, .beta = 1.0f});
  });
}

}  // namespace hai
