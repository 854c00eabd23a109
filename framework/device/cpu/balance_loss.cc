#include "framework/device/cpu/ops.h"

#include <algorithm>

namespace hai::cpu {
namespace {

// fraction [E] = E / (K * L) * counts of the experts chosen by the sequence's L tokens (topk [L, K]).
void expert_fraction_of_sequence(float* fraction, const int32_t* topk, int64_t tokens, int64_t experts_per_token,
                                 int64_t experts) {
  std::fill(fraction, fraction + experts, 0.0f);
  for (int64_t i = 0; i < tokens * experts_per_token; ++i) {
    HAI_CHECK(topk[i] >= 0 && topk[i] < experts, "balance loss: expert index {} outside [0, {})", topk[i], experts);
    fraction[topk[i]] += 1.0f;
  }
  float normaliser = static_cast<float>(experts) / static_cast<float>(experts_per_token * tokens);
  for (int64_t e = 0; e < experts; ++e) fraction[e] *= normaliser;
}

// Z_t = sum_i s[t, i] and sum_i f_i * s[t, i] for one token.
struct TokenSums {
  float score_sum = 0.0f;
  float fraction_weighted = 0.0f;
};

TokenSums token_sums(const float* score, const float* fraction, int64_t experts) {
  TokenSums sums;
  for (int64_t e = 0; e < experts; ++e) {
    sums.score_sum += score[e];
    sums.fraction_weighted += fraction[e] * score[e];
  }
  return sums;
}

}  // namespace

void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha) {
  const int64_t sequences = expert_fraction.size(0), experts = scores.size(1);
  const int64_t tokens_per_sequence = scores.size(0) / sequences, experts_per_token = topk_indices.size(1);
  const float* score_data = scores.data<float>();            // [T, E]
  const int32_t* index_data = topk_indices.data<int32_t>();  // [T, K]
  float* fraction_data = expert_fraction.data<float>();      // [N, E]
  float* loss_data = loss.data<float>();                     // [N]
  for (int64_t n = 0; n < sequences; ++n) {
    float* fraction = fraction_data + n * experts;
    int64_t first_token = n * tokens_per_sequence;
    expert_fraction_of_sequence(fraction, index_data + first_token * experts_per_token, tokens_per_sequence,
                                experts_per_token, experts);
    float total = 0.0f;  // sum_t sum_i f_i s[t, i] / Z_t = L * sum_i f_i P_i
    for (int64_t t = first_token; t < first_token + tokens_per_sequence; ++t) {
      TokenSums sums = token_sums(score_data + t * experts, fraction, experts);
      total += sums.fraction_weighted / sums.score_sum;
    }
    loss_data[n] = alpha / static_cast<float>(tokens_per_sequence) * total;
  }
}

void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha) {
  const int64_t sequences = expert_fraction.size(0), experts = scores.size(1);
  const int64_t tokens_per_sequence = scores.size(0) / sequences;
  const float* score_data = scores.data<float>();               // [T, E]
  const float* fraction_data = expert_fraction.data<float>();   // [N, E]
  const float* d_loss_data = d_loss.data<float>();              // [N]
  float* d_logit_data = d_logits.data<float>();                 // [T, E]
  for (int64_t t = 0; t < scores.size(0); ++t) {
    int64_t n = t / tokens_per_sequence;
    const float* fraction = fraction_data + n * experts;
    const float* score = score_data + t * experts;
    TokenSums sums = token_sums(score, fraction, experts);
    float mean_fraction = sums.fraction_weighted / sums.score_sum;
    float d_scale = d_loss_data[n] * alpha / static_cast<float>(tokens_per_sequence) / sums.score_sum;
    for (int64_t e = 0; e < experts; ++e) {
      float d_score = d_scale * (fraction[e] - mean_fraction);
      d_logit_data[t * experts + e] += d_score * score[e] * (1.0f - score[e]);
    }
  }
}

}  // namespace hai::cpu
