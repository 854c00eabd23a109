#include "framework/device/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

struct RowSoftmax {
  float maximum;
  double sum_of_exponentials;  // sum_v exp(logit_v - maximum), at least 1
};

RowSoftmax row_softmax(const float* row, int64_t classes) {
  float maximum = *std::max_element(row, row + classes);
  double sum = 0;
  for (int64_t v = 0; v < classes; ++v) sum += std::exp(static_cast<double>(row[v]) - maximum);
  return {maximum, sum};
}

// Rows are independent; the work of one is a few operations per class, exp included.
int64_t work_per_row(int64_t classes) { return 16 * classes; }

}  // namespace

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  const float* scores = logits.data<float>();       // [T, V]
  const int32_t* target = targets.data<int32_t>();  // [T]
  float* loss = losses.data<float>();               // [T]
  int64_t classes = logits.size(1);
  parallel_for(logits.size(0), work_per_row(classes), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (target[t] == ignore_index) {
        loss[t] = 0.0f;
        continue;
      }
      const float* row = scores + t * classes;
      RowSoftmax softmax = row_softmax(row, classes);
      double log_sum = std::log(softmax.sum_of_exponentials) + softmax.maximum;
      loss[t] = static_cast<float>(log_sum - row[target[t]]);
    }
  });
}

void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index) {
  const float* scores = logits.data<float>();       // [T, V]
  const int32_t* target = targets.data<int32_t>();  // [T]
  float* d_scores = d_logits.data<float>();         // [T, V], may alias scores
  int64_t classes = logits.size(1);
  parallel_for(logits.size(0), 2 * work_per_row(classes), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* d_row = d_scores + t * classes;
      if (target[t] == ignore_index) {
        std::fill_n(d_row, classes, 0.0f);
        continue;
      }
      const float* row = scores + t * classes;
      RowSoftmax softmax = row_softmax(row, classes);
      for (int64_t v = 0; v < classes; ++v) {
        double probability = std::exp(static_cast<double>(row[v]) - softmax.maximum) / softmax.sum_of_exponentials;
        double onehot = v == target[t] ? 1.0 : 0.0;
        d_row[v] = static_cast<float>((probability - onehot) * scale);
      }
    }
  });
}

}  // namespace hai::cpu
