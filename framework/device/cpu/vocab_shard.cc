#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/device/cpu/float_elements.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// The row of the shard holding global id `id`, or -1.
int64_t shard_row(int64_t id, int64_t first, int64_t rows) {
  int64_t row = id - first;
  return row >= 0 && row < rows ? row : -1;
}

template <typename Gradient>
void gradient_rows(Gradient* d_scores, const Tensor& logits, const Tensor& row_max, const Tensor& stats,
                   const Tensor& targets, int64_t first, float scale, int32_t ignore_index) {
  const float* scores = logits.data<float>();  // [T, V_r]
  const float* maximum = row_max.data<float>();
  const float* sums = stats.data<float>();  // [3, T]
  const int32_t* target = targets.data<int32_t>();
  int64_t tokens = logits.size(0), classes = logits.size(1);
  parallel_for(tokens, 32 * classes, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      Gradient* d_row = d_scores + t * classes;  // may alias the logits row when fp32
      if (target[t] == ignore_index) {
        for (int64_t v = 0; v < classes; ++v) store(d_row + v, 0.0f);
        continue;
      }
      const float* row = scores + t * classes;
      double sum = static_cast<double>(sums[t]) + sums[tokens + t];
      int64_t target_row = shard_row(target[t], first, classes);
      for (int64_t v = 0; v < classes; ++v) {
        double probability = std::exp(static_cast<double>(row[v]) - maximum[t]) / sum;
        double onehot = v == target_row ? 1.0 : 0.0;
        store(d_row + v, static_cast<float>((probability - onehot) * scale));
      }
    }
  });
}

}  // namespace

void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first) {
  const float* weights = table.data<float>();   // [V_r, D]
  const int32_t* tokens = ids.data<int32_t>();  // [T]
  float* rows = out.data<float>();              // [T, D]
  int64_t width = table.size(1);
  for (int64_t t = 0; t < ids.size(0); ++t) {
    int64_t row = shard_row(tokens[t], first, table.size(0));
    if (row < 0) {
      std::fill_n(rows + t * width, width, 0.0f);
    } else {
      std::copy_n(weights + row * width, width, rows + t * width);
    }
  }
}

void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first) {
  const float* d_rows = d_out.data<float>();    // [T, D]
  const int32_t* tokens = ids.data<int32_t>();  // [T]
  float* d_weights = d_table.data<float>();     // [V_r, D]
  int64_t width = d_table.size(1);
  for (int64_t t = 0; t < ids.size(0); ++t) {
    int64_t row = shard_row(tokens[t], first, d_table.size(0));
    if (row < 0) continue;
    for (int64_t d = 0; d < width; ++d) d_weights[row * width + d] += d_rows[t * width + d];
  }
}

void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits) {
  const float* scores = logits.data<float>();
  float* maximum = row_max.data<float>();
  int64_t classes = logits.size(1);
  for (int64_t t = 0; t < logits.size(0); ++t) {
    const float* row = scores + t * classes;
    maximum[t] = classes > 0 ? *std::max_element(row, row + classes) : -std::numeric_limits<float>::infinity();
  }
}

void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first) {
  const float* scores = logits.data<float>();
  const float* maximum = row_max.data<float>();
  const int32_t* target = targets.data<int32_t>();
  float* sums = stats.data<float>();  // [3, T]
  int64_t tokens = logits.size(0), classes = logits.size(1);
  parallel_for(tokens, 16 * classes, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* row = scores + t * classes;
      double sum = 0;
      for (int64_t v = 0; v < classes; ++v) sum += std::exp(static_cast<double>(row[v]) - maximum[t]);
      auto high = static_cast<float>(sum);
      sums[t] = high;
      sums[tokens + t] = static_cast<float>(sum - high);
      int64_t target_row = shard_row(target[t], first, classes);
      sums[2 * tokens + t] = target_row >= 0 ? row[target_row] : 0.0f;
    }
  });
}

void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index) {
  const float* maximum = row_max.data<float>();
  const float* sums = stats.data<float>();
  const int32_t* target = targets.data<int32_t>();
  float* loss = losses.data<float>();
  int64_t tokens = logits.size(0);
  for (int64_t t = 0; t < tokens; ++t) {
    double sum = static_cast<double>(sums[t]) + sums[tokens + t];
    loss[t] = target[t] == ignore_index
                  ? 0.0f
                  : static_cast<float>(std::log(sum) + maximum[t] - static_cast<double>(sums[2 * tokens + t]));
  }
  if (!d_logits.defined()) return;
  if (d_logits.dtype() == DType::bf16) {
    return gradient_rows(d_logits.data<bf16>(), logits, row_max, stats, targets, first, scale, ignore_index);
  }
  gradient_rows(d_logits.data<float>(), logits, row_max, stats, targets, first, scale, ignore_index);
}

}  // namespace hai::cpu
