#include <climits>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

constexpr unsigned int kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int kMaxWarpsPerBlock = 8;
constexpr int kSharedBytesPerBlock = 48 * 1024;
constexpr int kNoExpert = INT_MAX;

// The CPU op's sigmoid: in double, rounded once.
__device__ float sigmoid(float logit) {
  double e = exp(-static_cast<double>(logit));
  return __double2float_rn(__ddiv_rn(1.0, __dadd_rn(1.0, e)));
}

// Larger value first; on equal values the lower index wins.
__device__ bool ranks_before(float value, int index, float other_value, int other_index) {
  return value > other_value || (value == other_value && index < other_index);
}

// A candidate expert (value, index); kNoExpert ranks after every real one.
struct Candidate {
  float value;
  int index;

  __device__ bool beats(const Candidate& other) const {
    return index != kNoExpert && (other.index == kNoExpert || ranks_before(value, index, other.value, other.index));
  }
};

// The best candidate of the warp, returned to every lane.
__device__ Candidate warp_best(Candidate mine) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    Candidate other{__shfl_xor_sync(kFullMask, mine.value, offset), __shfl_xor_sync(kFullMask, mine.index, offset)};
    if (other.beats(mine)) mine = other;
  }
  return mine;
}

// One warp's shared memory: selection values, group scores, kept groups, candidate flags.
struct WarpScratch {
  float* selection;  // [E]
  float* group_score;  // [groups]
  int* group_kept;     // [groups]
  int* candidate;      // [E]: 1 while the expert may still be chosen
};

__host__ __device__ int64_t warp_scratch_words(const RouterShape& shape) { return 2 * shape.experts + 2 * shape.groups; }

__device__ WarpScratch warp_scratch(float* shared, const RouterShape& shape) {
  int warp = threadIdx.x / kWarpSize;
  float* base = shared + warp * warp_scratch_words(shape);
  return {base, base + shape.experts, reinterpret_cast<int*>(base + shape.experts + shape.groups),
          reinterpret_cast<int*>(base + shape.experts + 2 * shape.groups)};
}

// top1 + top2 of the group's selection values (the CPU op's scan); the single value for a group of one expert.
__device__ float group_score(const float* selection, int64_t begin, int64_t group_size) {
  float first = selection[begin];
  if (group_size == 1) return first;
  float second = selection[begin + 1];
  if (second > first) {
    float swapped = first;
    first = second;
    second = swapped;
  }
  for (int64_t expert = begin + 2; expert < begin + group_size; ++expert) {
    float value = selection[expert];
    if (value > first) {
      second = first;
      first = value;
    } else if (value > second) {
      second = value;
    }
  }
  return __fadd_rn(first, second);
}

// Marks the experts of the groups_per_token best groups as candidates.
__device__ void mark_kept_groups(const WarpScratch& scratch, const RouterShape& shape, int lane) {
  int64_t group_size = shape.experts / shape.groups;
  for (int64_t group = lane; group < shape.groups; group += kWarpSize) {
    scratch.group_score[group] = group_score(scratch.selection, group * group_size, group_size);
  }
  __syncwarp();
  for (int64_t group = lane; group < shape.groups; group += kWarpSize) {
    int64_t better_groups = 0;
    float own = scratch.group_score[group];
    for (int64_t other = 0; other < shape.groups; ++other) {
      if (other != group && ranks_before(scratch.group_score[other], other, own, group)) ++better_groups;
    }
    scratch.group_kept[group] = better_groups < shape.groups_per_token;
  }
  __syncwarp();
  for (int64_t e = lane; e < shape.experts; e += kWarpSize) scratch.candidate[e] = scratch.group_kept[e / group_size];
  __syncwarp();
}

// The K best candidates, best first; lane k returns choice k (kNoExpert on lanes >= K).
__device__ int choose_experts(const WarpScratch& scratch, const RouterShape& shape, int lane) {
  int my_choice = kNoExpert;
  for (int64_t k = 0; k < shape.experts_per_token; ++k) {
    Candidate best{0.0f, kNoExpert};
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) {
      Candidate candidate{scratch.selection[e], static_cast<int>(e)};
      if (scratch.candidate[e] && candidate.beats(best)) best = candidate;
    }
    best = warp_best(best);
    if (lane == k) my_choice = best.index;
    __syncwarp();
    if (lane == 0 && best.index != kNoExpert) scratch.candidate[best.index] = 0;
    __syncwarp();
  }
  return my_choice;
}

__global__ void router_forward_kernel(float* scores, int32_t* topk_indices, float* topk_weights, const float* logits,
                                      const float* bias, RouterShape shape, float routed_scaling_factor) {
  extern __shared__ float shared[];
  WarpScratch scratch = warp_scratch(shared, shape);
  int lane = threadIdx.x % kWarpSize;
  int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  for (int64_t token = grid_index() / kWarpSize; token < shape.tokens; token += warps) {
    const float* logit = logits + token * shape.experts;  // [E]
    float* score = scores + token * shape.experts;        // [E]
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) {
      float s = sigmoid(logit[e]);
      score[e] = s;
      scratch.selection[e] = __fadd_rn(s, bias[e]);
    }
    __syncwarp();
    mark_kept_groups(scratch, shape, lane);
    int choice = choose_experts(scratch, shape, lane);
    bool holds_choice = lane < shape.experts_per_token && choice != kNoExpert;
    float chosen_score = holds_choice ? sigmoid(logit[choice]) : 0.0f;
    float sum = 0.0f;
    for (int k = 0; k < shape.experts_per_token; ++k) sum = __fadd_rn(sum, __shfl_sync(kFullMask, chosen_score, k));
    if (lane < shape.experts_per_token) {
      int64_t slot = token * shape.experts_per_token + lane;
      topk_indices[slot] = holds_choice ? choice : -1;
      topk_weights[slot] = __fmul_rn(__fdiv_rn(chosen_score, sum), routed_scaling_factor);
    }
    __syncwarp();
  }
}

__global__ void router_backward_kernel(float* d_logits, const float* d_topk_weights, const float* scores,
                                       const int32_t* topk_indices, RouterShape shape, float routed_scaling_factor) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  for (int64_t token = grid_index() / kWarpSize; token < shape.tokens; token += warps) {
    float* d_logit = d_logits + token * shape.experts;  // [E]
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) d_logit[e] = 0.0f;
    bool holds_choice = lane < shape.experts_per_token;
    int64_t slot = token * shape.experts_per_token + lane;
    int choice = holds_choice ? topk_indices[slot] : 0;
    float s = holds_choice ? scores[token * shape.experts + choice] : 0.0f;
    float d_weight = holds_choice ? d_topk_weights[slot] : 0.0f;
    float sum = 0.0f, weighted_d_weight = 0.0f;
    for (int k = 0; k < shape.experts_per_token; ++k) {
      float s_k = __shfl_sync(kFullMask, s, k);
      sum = __fadd_rn(sum, s_k);
      weighted_d_weight = __fadd_rn(weighted_d_weight, __fmul_rn(__shfl_sync(kFullMask, d_weight, k), s_k));
    }
    __syncwarp();
    if (holds_choice) {
      float d_score = __fmul_rn(__fdiv_rn(routed_scaling_factor, sum),
                                __fsub_rn(d_weight, __fdiv_rn(weighted_d_weight, sum)));
      d_logit[choice] = __fmul_rn(__fmul_rn(d_score, s), __fsub_rn(1.0f, s));
    }
    __syncwarp();
  }
}

// Warps per block such that every warp's scratch fits the block's shared memory.
int forward_warps_per_block(const RouterShape& shape) {
  int64_t bytes_per_warp = warp_scratch_words(shape) * static_cast<int64_t>(sizeof(float));
  int64_t warps = kSharedBytesPerBlock / bytes_per_warp;
  return static_cast<int>(warps < 1 ? 1 : (warps > kMaxWarpsPerBlock ? kMaxWarpsPerBlock : warps));
}

unsigned int blocks_for_tokens(int64_t tokens, int warps_per_block) {
  constexpr int64_t kMaxBlocks = 8192;
  int64_t blocks = (tokens + warps_per_block - 1) / warps_per_block;
  return static_cast<unsigned int>(blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

}  // namespace

cudaError_t router_forward(float* scores, int32_t* topk_indices, float* topk_weights, const float* logits,
                           const float* bias, const RouterShape& shape, float routed_scaling_factor,
                           cudaStream_t stream) {
  if (shape.tokens == 0) return cudaSuccess;
  int warps = forward_warps_per_block(shape);
  size_t shared_bytes = static_cast<size_t>(warps) * warp_scratch_words(shape) * sizeof(float);
  router_forward_kernel<<<blocks_for_tokens(shape.tokens, warps), warps * kWarpSize, shared_bytes, stream>>>(
      scores, topk_indices, topk_weights, logits, bias, shape, routed_scaling_factor);
  return cudaGetLastError();
}

cudaError_t router_backward(float* d_logits, const float* d_topk_weights, const float* scores,
                            const int32_t* topk_indices, const RouterShape& shape, float routed_scaling_factor,
                            cudaStream_t stream) {
  if (shape.tokens == 0) return cudaSuccess;
  router_backward_kernel<<<blocks_for_tokens(shape.tokens, kMaxWarpsPerBlock), kMaxWarpsPerBlock * kWarpSize, 0,
                           stream>>>(d_logits, d_topk_weights, scores, topk_indices, shape, routed_scaling_factor);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
