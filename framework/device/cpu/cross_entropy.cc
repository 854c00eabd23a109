#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <cmath>

#include "framework/device/cpu/float_elements.h"
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

float token_loss(const float* row, const RowSoftmax& softmax, int32_t target) {
  double log_sum = std::log(softmax.sum_of_exponentials) + softmax.maximum;
  return static_cast<float>(log_sum - row[target]);
}

// d_logits rows (and, unless losses is null, the losses) from one softmax per row.
template <typename Gradient>
void loss_and_grad_rows(float* losses, Gradient* d_scores, const Tensor& logits, const Tensor& targets, float scale,
                        int32_t ignore_index) {
  const float* scores = logits.data<float>();       // [T, V]
  const int32_t* target = targets.data<int32_t>();  // [T]
  int64_t classes = logits.size(1);
  parallel_for(logits.size(0), 2 * work_per_row(classes), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      Gradient* d_row = d_scores + t * classes;  // may alias the logits row when fp32
      if (target[t] == ignore_index) {
        if (losses) losses[t] = 0.0f;
        for (int64_t v = 0; v < classes; ++v) store(d_row + v, 0.0f);
        continue;
      }
      const float* row = scores + t * classes;
      RowSoftmax softmax = row_softmax(row, classes);
      if (losses) losses[t] = token_loss(row, softmax, target[t]);
      for (int64_t v = 0; v < classes; ++v) {
        double probability = std::exp(static_cast<double>(row[v]) - softmax.maximum) / softmax.sum_of_exponentials;
        double onehot = v == target[t] ? 1.0 : 0.0;
        store(d_row + v, static_cast<float>((probability - onehot) * scale));
      }
    }
  });
}

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
      loss[t] = token_loss(row, row_softmax(row, classes), target[t]);
    }
  });
}

void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index) {
  loss_and_grad_rows(nullptr, d_logits.data<float>(), logits, targets, scale, ignore_index);
}

void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index) {
  if (d_logits.dtype() == DType::bf16) {
    return loss_and_grad_rows(losses.data<float>(), d_logits.data<bf16>(), logits, targets, scale, ignore_index);
  }
  loss_and_grad_rows(losses.data<float>(), d_logits.data<float>(), logits, targets, scale, ignore_index);
}

}  // namespace hai::cpu
