#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <cmath>

namespace hai::cpu {
namespace {

// NOTE: computed in double and rounded once, so the result is the correctly rounded sigmoid in all but ~1e-9 of
// cases whatever the libm; the CUDA router does the same and matches this one bit for bit (hence its exact parity).
float sigmoid(float logit) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logit)))); }

// Larger value first; on equal values the lower index wins.
bool ranks_before(float value, int64_t index, float other_value, int64_t other_index) {
  return value > other_value || (value == other_value && index < other_index);
}

// One token's selection values score[e] + bias[e] and its group layout.
struct SelectionRow {
  const float* score;  // [E]
  const float* bias;   // [E]
  int64_t group_size;

  float operator[](int64_t expert) const { return score[expert] + bias[expert]; }

  // top1 + top2 of the group's selection values; the single value for a group of one expert.
  float group_score(int64_t group) const {
    int64_t begin = group * group_size;
    float first = (*this)[begin];
    if (group_size == 1) return first;
    float second = (*this)[begin + 1];
    if (second > first) std::swap(first, second);
    for (int64_t expert = begin + 2; expert < begin + group_size; ++expert) {
      float value = (*this)[expert];
      if (value > first) {
        second = first;
        first = value;
      } else if (value > second) {
        second = value;
      }
    }
    return first + second;
  }

  // A group is kept when fewer than groups_per_token groups rank before it.
  bool group_is_kept(int64_t group, const RouterOptions& options) const {
    float score_of_group = group_score(group);
    int64_t better_groups = 0;
    for (int64_t other = 0; other < options.groups; ++other) {
      if (other != group && ranks_before(group_score(other), other, score_of_group, group)) ++better_groups;
    }
    return better_groups < options.groups_per_token;
  }
};

bool already_chosen(const int32_t* chosen, int64_t count, int64_t expert) {
  return std::find(chosen, chosen + count, static_cast<int32_t>(expert)) != chosen + count;
}

// Fills chosen [K] with the best K experts of the kept groups, best first.
void select_experts(int32_t* chosen, int64_t experts_per_token, const SelectionRow& selection,
                    const RouterOptions& options) {
  for (int64_t k = 0; k < experts_per_token; ++k) {
    int64_t best = -1;
    for (int64_t group = 0; group < options.groups; ++group) {
      if (!selection.group_is_kept(group, options)) continue;
      for (int64_t expert = group * selection.group_size; expert < (group + 1) * selection.group_size; ++expert) {
        if (already_chosen(chosen, k, expert)) continue;
        if (best < 0 || ranks_before(selection[expert], expert, selection[best], best)) best = expert;
      }
    }
    chosen[k] = static_cast<int32_t>(best);
  }
}

// weights [K] = score[chosen[k]] / sum_k score[chosen[k]] * routed_scaling_factor
void normalise_weights(float* weights, const int32_t* chosen, int64_t experts_per_token, const float* score,
                       float routed_scaling_factor) {
  float sum = 0.0f;
  for (int64_t k = 0; k < experts_per_token; ++k) sum += score[chosen[k]];
  for (int64_t k = 0; k < experts_per_token; ++k) weights[k] = score[chosen[k]] / sum * routed_scaling_factor;
}

}  // namespace

void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options) {
  const int64_t tokens = scores.size(0), experts = scores.size(1), experts_per_token = topk_indices.size(1);
  const float* logit_data = logits.data<float>();  // [T, E]
  const float* bias_data = bias.data<float>();     // [E]
  float* score_data = scores.data<float>();        // [T, E]
  int32_t* index_data = topk_indices.data<int32_t>();  // [T, K]
  float* weight_data = topk_weights.data<float>();     // [T, K]
  for (int64_t t = 0; t < tokens; ++t) {
    float* score = score_data + t * experts;
    for (int64_t e = 0; e < experts; ++e) score[e] = sigmoid(logit_data[t * experts + e]);
    SelectionRow selection{score, bias_data, experts / options.groups};
    int32_t* chosen = index_data + t * experts_per_token;
    select_experts(chosen, experts_per_token, selection, options);
    normalise_weights(weight_data + t * experts_per_token, chosen, experts_per_token, score,
                      options.routed_scaling_factor);
  }
}

void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor) {
  const int64_t tokens = scores.size(0), experts = scores.size(1), experts_per_token = topk_indices.size(1);
  const float* score_data = scores.data<float>();             // [T, E]
  const int32_t* index_data = topk_indices.data<int32_t>();   // [T, K]
  const float* d_weight_data = d_topk_weights.data<float>();  // [T, K]
  float* d_logit_data = d_logits.data<float>();               // [T, E]
  std::fill(d_logit_data, d_logit_data + d_logits.numel(), 0.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* score = score_data + t * experts;
    const int32_t* chosen = index_data + t * experts_per_token;
    const float* d_weight = d_weight_data + t * experts_per_token;
    float sum = 0.0f, weighted_d_weight = 0.0f;
    for (int64_t k = 0; k < experts_per_token; ++k) {
      sum += score[chosen[k]];
      weighted_d_weight += d_weight[k] * score[chosen[k]];
    }
    for (int64_t k = 0; k < experts_per_token; ++k) {
      float s = score[chosen[k]];
      float d_score = routed_scaling_factor / sum * (d_weight[k] - weighted_d_weight / sum);
      d_logit_data[t * experts + chosen[k]] = d_score * s * (1.0f - s);
    }
  }
}

}  // namespace hai::cpu
