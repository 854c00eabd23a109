#include "framework/device/cpu/ops.h"

#include <algorithm>

namespace hai::cpu {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids) {
  const float* weights = table.data<float>();   // [V, D]
  const int32_t* tokens = ids.data<int32_t>();  // [T]
  float* rows = out.data<float>();              // [T, D]
  int64_t width = table.size(1);
  for (int64_t t = 0; t < ids.size(0); ++t) {
    std::copy_n(weights + tokens[t] * width, width, rows + t * width);
  }
}

void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids) {
  const float* d_rows = d_out.data<float>();    // [T, D]
  const int32_t* tokens = ids.data<int32_t>();  // [T]
  float* d_weights = d_table.data<float>();     // [V, D]
  int64_t width = d_table.size(1);
  for (int64_t t = 0; t < ids.size(0); ++t) {
    float* d_row = d_weights + tokens[t] * width;
    for (int64_t d = 0; d < width; ++d) d_row[d] += d_rows[t * width + d];
  }
}

}  // namespace hai::cpu
