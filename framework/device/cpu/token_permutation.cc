#include "framework/device/cpu/ops.h"

#include <algorithm>

#include "framework/device/cpu/float_elements.h"

namespace hai::cpu {
namespace {

// unpermute_tokens on y_sorted stored as Rows (float or bf16); the sums start from addend, or from 0 when it is not
// defined.
template <typename Rows>
void unpermute_of(const Tensor& out, const Rows* y, const Tensor& topk_weights, const RoutingPlan& plan,
                  const Tensor& addend) {
  const int64_t width = out.size(1), experts_per_token = plan.positions.size(1);
  const float* weights = topk_weights.data<float>();          // [T, K]
  const int32_t* positions = plan.positions.data<int32_t>();  // [T, K]
  float* out_data = out.data<float>();                        // [T, D]
  if (addend.defined()) {
    const float* addend_data = addend.data<float>();  // [T, D]
    std::copy(addend_data, addend_data + addend.numel(), out_data);
  } else {
    std::fill(out_data, out_data + out.numel(), 0.0f);
  }
  for (int64_t t = 0; t < out.size(0); ++t) {
    float* token = out_data + t * width;
    for (int64_t k = 0; k < experts_per_token; ++k) {
      int64_t a = t * experts_per_token + k;
      const Rows* y_row = y + positions[a] * width;  // [D]
      for (int64_t d = 0; d < width; ++d) token[d] += weights[a] * widened(y_row[d]);
    }
  }
}

// unpermute_tokens_backward on y_sorted stored as Rows and d_y_sorted as Gradient (each float or bf16).
template <typename Gradient, typename Rows>
void unpermute_backward_of(Gradient* d_y, const Tensor& d_topk_weights, const Tensor& d_out, const Rows* y,
                           const Tensor& topk_weights, const RoutingPlan& plan) {
  const int64_t width = d_out.size(1), assignments = topk_weights.numel();
  const int64_t experts_per_token = plan.positions.size(1);
  const float* d_out_data = d_out.data<float>();              // [T, D]
  const float* weights = topk_weights.data<float>();          // [T, K]
  const int32_t* positions = plan.positions.data<int32_t>();  // [T, K]
  float* d_weights = d_topk_weights.data<float>();            // [T, K]
  for (int64_t a = 0; a < assignments; ++a) {
    const float* d_token = d_out_data + (a / experts_per_token) * width;
    const Rows* y_row = y + positions[a] * width;  // [D]
    Gradient* d_y_row = d_y + positions[a] * width;  // [D]
    float dot = 0.0f;
    for (int64_t d = 0; d < width; ++d) {
      store(d_y_row + d, weights[a] * d_token[d]);
      dot += d_token[d] * widened(y_row[d]);
    }
    d_weights[a] = dot;
  }
}

}  // namespace

void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices) {
  const int64_t assignments = topk_indices.numel(), experts = plan.expert_offsets.numel() - 1;
  const int32_t* expert_of = topk_indices.data<int32_t>();  // [T * K]
  int32_t* positions = plan.positions.data<int32_t>();      // [T * K]
  int32_t* sources = plan.sources.data<int32_t>();          // [T * K]
  int32_t* offsets = plan.expert_offsets.data<int32_t>();   // [E + 1]
  std::fill(offsets, offsets + experts + 1, 0);
  for (int64_t a = 0; a < assignments; ++a) {
    HAI_CHECK(expert_of[a] >= 0 && expert_of[a] < experts, "routing plan: expert index {} outside [0, {})",
              expert_of[a], experts);
    ++offsets[expert_of[a] + 1];
  }
  for (int64_t e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
  // NOTE: offsets[e] serves as expert e's write cursor and ends at the start of expert e + 1; shifting the array
  // right by one afterwards restores the starts, so no scratch is needed.
  for (int64_t a = 0; a < assignments; ++a) {
    int32_t row = offsets[expert_of[a]]++;
    positions[a] = row;
    sources[row] = static_cast<int32_t>(a);
  }
  for (int64_t e = experts; e > 0; --e) offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan) {
  const int64_t row_bytes = x.size(1) * static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t experts_per_token = plan.positions.size(1);
  const auto* x_bytes = static_cast<const char*>(x.raw());  // [T, D]
  const int32_t* sources = plan.sources.data<int32_t>();     // [T * K]
  auto* sorted = static_cast<char*>(x_sorted.raw());         // [T * K, D]
  for (int64_t row = 0; row < x_sorted.size(0); ++row) {
    const char* token = x_bytes + (sources[row] / experts_per_token) * row_bytes;
    std::copy(token, token + row_bytes, sorted + row * row_bytes);
  }
}

void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan) {
  const int64_t width = d_x.size(1), experts_per_token = plan.positions.size(1);
  const float* d_sorted = d_x_sorted.data<float>();            // [T * K, D]
  const int32_t* positions = plan.positions.data<int32_t>();  // [T, K]
  float* d_x_data = d_x.data<float>();                         // [T, D]
  std::fill(d_x_data, d_x_data + d_x.numel(), 0.0f);
  for (int64_t t = 0; t < d_x.size(0); ++t) {
    float* d_token = d_x_data + t * width;
    for (int64_t k = 0; k < experts_per_token; ++k) {
      const float* d_row = d_sorted + positions[t * experts_per_token + k] * width;
      for (int64_t d = 0; d < width; ++d) d_token[d] += d_row[d];
    }
  }
}

void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend) {
  if (y_sorted.dtype() == DType::bf16) return unpermute_of(out, y_sorted.data<bf16>(), topk_weights, plan, addend);
  unpermute_of(out, y_sorted.data<float>(), topk_weights, plan, addend);
}

void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan) {
  auto with_rows = [&](auto* d_y) {
    if (y_sorted.dtype() == DType::bf16) {
      return unpermute_backward_of(d_y, d_topk_weights, d_out, y_sorted.data<bf16>(), topk_weights, plan);
    }
    unpermute_backward_of(d_y, d_topk_weights, d_out, y_sorted.data<float>(), topk_weights, plan);
  };
  if (d_y_sorted.dtype() == DType::bf16) return with_rows(d_y_sorted.data<bf16>());
  with_rows(d_y_sorted.data<float>());
}

}  // namespace hai::cpu
