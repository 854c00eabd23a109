
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/device/cpu/ops.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// Index arithmetic for rows of [B, S, H, d] tensors and entries of the [B, H, S] log-sum-exp.
struct AttentionLayout {
  int64_t batch, sequence, heads, qk_dim, v_dim;

  AttentionLayout(const Tensor& q, const Tensor& v)
      : batch(q.size(0)), sequence(q.size(1)), heads(q.size(2)), qk_dim(q.size(3)), v_dim(v.size(3)) {}
  int64_t row(int64_t b, int64_t s, int64_t h) const { return (b * sequence + s) * heads + h; }
  int64_t lse_index(int64_t b, int64_t h, int64_t s) const { return (b * heads + h) * sequence + s; }
};

float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += alpha * x
void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scale_row(float factor, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= factor;
}

// Query row i of (b, h): an online softmax over keys 0..i that accumulates straight into out_row [d_v].
// Returns the row's log-sum-exp.
float attend_row(float* out_row, const float* q_row, const float* k, const float* v, const AttentionLayout& layout,
                 int64_t b, int64_t h, int64_t i, float softmax_scale) {
  float running_max = -std::numeric_limits<float>::infinity();
  float running_sum = 0.0f;
  std::fill(out_row, out_row + layout.v_dim, 0.0f);
  for (int64_t j = 0; j <= i; ++j) {
    int64_t key_row = layout.row(b, j, h);
    float score = softmax_scale * dot(q_row, k + key_row * layout.qk_dim, layout.qk_dim);
    if (score > running_max) {
      float rescale = std::exp(running_max - score);  // 0 for the first key
      scale_row(rescale, out_row, layout.v_dim);
      running_sum *= rescale;
      running_max = score;
    }
    float probability = std::exp(score - running_max);
    running_sum += probability;
    axpy(probability, v + key_row * layout.v_dim, out_row, layout.v_dim);
  }
  scale_row(1.0f / running_sum, out_row, layout.v_dim);
  return running_max + std::log(running_sum);
}

// Everything the backward pass reads and writes; shapes as in attention_backward.
struct BackwardOperands {
  AttentionLayout layout;
  const float* q;      // [B, S, H, d_qk]
  const float* k;      // [B, S, H, d_qk]
  const float* v;      // [B, S, H, d_v]
  const float* out;    // [B, S, H, d_v]
  const float* d_out;  // [B, S, H, d_v]
  const float* lse;    // [B, H, S]
  float* d_q;          // [B, S, H, d_qk]
  float* d_k;          // [B, S, H, d_qk]
  float* d_v;          // [B, S, H, d_v]
};

// Adds the contributions of query row i of (b, h) to d_q[i] and to d_k, d_v of keys 0..i, with the
// probabilities recomputed from the saved log-sum-exp.
void backward_query_row(const BackwardOperands& operands, int64_t b, int64_t h, int64_t i, float softmax_scale) {
  const AttentionLayout& layout = operands.layout;
  const int64_t qk_dim = layout.qk_dim, v_dim = layout.v_dim;
  int64_t query_row = layout.row(b, i, h);
  const float* q_row = operands.q + query_row * qk_dim;
  const float* d_out_row = operands.d_out + query_row * v_dim;
  float row_lse = operands.lse[layout.lse_index(b, h, i)];
  float d_out_dot_out = dot(d_out_row, operands.out + query_row * v_dim, v_dim);  // D[i]
  for (int64_t j = 0; j <= i; ++j) {
    int64_t key_row = layout.row(b, j, h);
    const float* k_row = operands.k + key_row * qk_dim;
    float probability = std::exp(softmax_scale * dot(q_row, k_row, qk_dim) - row_lse);
    float d_probability = dot(d_out_row, operands.v + key_row * v_dim, v_dim);
    float d_score = probability * (d_probability - d_out_dot_out);
    axpy(softmax_scale * d_score, k_row, operands.d_q + query_row * qk_dim, qk_dim);
    axpy(softmax_scale * d_score, q_row, operands.d_k + key_row * qk_dim, qk_dim);
    axpy(probability, d_out_row, operands.d_v + key_row * v_dim, v_dim);
  }
}

// Zeroes the gradient rows of (b, h), then adds every query row's contributions.
void backward_head(const BackwardOperands& operands, int64_t b, int64_t h, float softmax_scale) {
  const AttentionLayout& layout = operands.layout;
  for (int64_t s = 0; s < layout.sequence; ++s) {
    int64_t row = layout.row(b, s, h);
    std::fill_n(operands.d_q + row * layout.qk_dim, layout.qk_dim, 0.0f);
    std::fill_n(operands.d_k + row * layout.qk_dim, layout.qk_dim, 0.0f);
    std::fill_n(operands.d_v + row * layout.v_dim, layout.v_dim, 0.0f);
  }
  for (int64_t i = 0; i < layout.sequence; ++i) backward_query_row(operands, b, h, i, softmax_scale);
}

// Multiply-adds of one (b, h) head: about S^2 / 2 query-key pairs of the head widths.
int64_t work_per_head(const AttentionLayout& layout) {
  return layout.sequence * (layout.sequence + 1) / 2 * (layout.qk_dim + layout.v_dim);
}

// An fp32 copy of a bf16 (or fp32) tensor (exact).
OwnedTensor widened(const Tensor& x) {
  OwnedTensor wide(x.shape(), DType::f32);
  cast_tensor(wide, x);
  return wide;
}

}  // namespace

// NOTE: both passes run the (b, h) heads in parallel: every output and gradient row belongs to exactly one head,
// so the results do not depend on the thread count.
void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale) {
  if (out.dtype() == DType::bf16) {  // the fp32 result rounded once
    OwnedTensor wide(out.shape(), DType::f32);
    attention_forward(wide, lse, q, k, v, softmax_scale);
    return cast_tensor(out, wide);
  }
  if (q.dtype() == DType::bf16) {
    return attention_forward(out, lse, widened(q), widened(k), widened(v), softmax_scale);
  }
  AttentionLayout layout(q, v);
  const float* q_data = q.data<float>();  // [B, S, H, d_qk]
  const float* k_data = k.data<float>();  // [B, S, H, d_qk]
  const float* v_data = v.data<float>();  // [B, S, H, d_v]
  float* out_data = out.data<float>();    // [B, S, H, d_v]
  float* lse_data = lse.data<float>();    // [B, H, S]
  parallel_for(layout.batch * layout.heads, work_per_head(layout), [&](int64_t begin, int64_t end) {
    for (int64_t head = begin; head < end; ++head) {
      int64_t b = head / layout.heads, h = head % layout.heads;
      for (int64_t i = 0; i < layout.sequence; ++i) {
        int64_t query_row = layout.row(b, i, h);
        lse_data[layout.lse_index(b, h, i)] =
            attend_row(out_data + query_row * layout.v_dim, q_data + query_row * layout.qk_dim, k_data, v_data,
                       layout, b, h, i, softmax_scale);
      }
    }
  });
}

void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale) {
  if (q.dtype() == DType::bf16) {
    return attention_backward(d_q, d_k, d_v, widened(d_out), widened(q), widened(k), widened(v), widened(out), lse,
                              softmax_scale);
  }
  BackwardOperands operands{AttentionLayout(q, v), q.data<float>(), k.data<float>(), v.data<float>(),
                            out.data<float>(), d_out.data<float>(), lse.data<float>(), d_q.data<float>(),
                            d_k.data<float>(), d_v.data<float>()};
  const AttentionLayout& layout = operands.layout;
  parallel_for(layout.batch * layout.heads, 2 * work_per_head(layout), [&](int64_t begin, int64_t end) {
    for (int64_t head = begin; head < end; ++head) {
      backward_head(operands, head / layout.heads, head % layout.heads, softmax_scale);
    }
  });
}

}  // namespace hai::cpu
