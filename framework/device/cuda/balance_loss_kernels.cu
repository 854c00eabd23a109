#include "framework/device/cuda/balance_loss_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kWarpSize = 32;
constexpr int kSequenceThreads = 1024;  // one block per sequence: as many warps as a block holds
constexpr int kBackwardWarpsPerBlock = 8;

// Z_t = sum_i s[t, i] and sum_i f_i s[t, i] of one token, summed by its warp and returned to every lane.
struct TokenSums {
  float score_sum;
  float fraction_weighted;
};

__device__ TokenSums token_sums(const float* score, const float* fraction, int64_t experts, int lane) {
  float score_sum = 0.0f, fraction_weighted = 0.0f;
  for (int64_t e = lane; e < experts; e += kWarpSize) {
    score_sum += score[e];
    fraction_weighted += fraction[e] * score[e];
  }
  return {warp_sum(score_sum), warp_sum(fraction_weighted)};
}

// Expert counts of the sequence in shared memory, then f = E / (K * L) * count (exact, as on the CPU).
__device__ void expert_fraction_of_sequence(float* fraction, float* global_fraction, int* counts,
                                            const int32_t* topk, const BalanceShape& shape) {
  for (int64_t e = threadIdx.x; e < shape.experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  int64_t assignments = shape.tokens_per_sequence * shape.experts_per_token;
  for (int64_t i = threadIdx.x; i < assignments; i += blockDim.x) {
    int32_t expert = topk[i];
    if (expert >= 0 && expert < shape.experts) atomicAdd(&counts[expert], 1);
  }
  __syncthreads();
  float normaliser = __fdiv_rn(static_cast<float>(shape.experts), static_cast<float>(assignments));
  for (int64_t e = threadIdx.x; e < shape.experts; e += blockDim.x) {
    fraction[e] = __fmul_rn(static_cast<float>(counts[e]), normaliser);
    global_fraction[e] = fraction[e];
  }
  __syncthreads();
}

__global__ void balance_forward_kernel(float* loss, float* expert_fraction, const float* scores,
                                       const int32_t* topk_indices, BalanceShape shape, float alpha) {
  extern __shared__ float fraction[];  // [E], then E ints of counts
  __shared__ float scratch[32];
  int64_t sequence = blockIdx.x;
  int64_t first_token = sequence * shape.tokens_per_sequence;
  expert_fraction_of_sequence(fraction, expert_fraction + sequence * shape.experts,
                              reinterpret_cast<int*>(fraction + shape.experts),
                              topk_indices + first_token * shape.experts_per_token, shape);
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  // sum over this warp's tokens (warp, warp + warps, ...) of sum_i f_i s[t, i] / Z_t, in that order; kTokenBatch of
  // them at a time, each lane's loads of the batch in flight together (token_sums' sums, term by term).
  constexpr int kTokenBatch = 8;
  float warp_total = 0.0f;
  for (int64_t first = warp; first < shape.tokens_per_sequence; first += kTokenBatch * warps) {
    float score_sum[kTokenBatch] = {}, fraction_weighted[kTokenBatch] = {};
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) {
#pragma unroll
      for (int i = 0; i < kTokenBatch; ++i) {
        int64_t t = first + i * warps;
        float score = t < shape.tokens_per_sequence ? scores[(first_token + t) * shape.experts + e] : 0.0f;
        score_sum[i] += score;
        fraction_weighted[i] += fraction[e] * score;
      }
    }
#pragma unroll
    for (int i = 0; i < kTokenBatch; ++i) {
      float sum = warp_sum(score_sum[i]), weighted = warp_sum(fraction_weighted[i]);
      if (first + i * warps < shape.tokens_per_sequence) warp_total += weighted / sum;
    }
  }
  float total = block_sum(lane == 0 ? warp_total : 0.0f, scratch);
  if (threadIdx.x == 0) loss[sequence] = alpha / static_cast<float>(shape.tokens_per_sequence) * total;
}

__global__ void balance_backward_kernel(float* d_logits, const float* d_loss, const float* expert_fraction,
                                        const float* scores, BalanceShape shape, float alpha) {
  int lane = threadIdx.x % kWarpSize;
  int64_t tokens = shape.sequences * shape.tokens_per_sequence;
  int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  for (int64_t t = grid_index() / kWarpSize; t < tokens; t += warps) {
    int64_t sequence = t / shape.tokens_per_sequence;
    const float* fraction = expert_fraction + sequence * shape.experts;  // [E]
    const float* score = scores + t * shape.experts;                    // [E]
    float* d_logit = d_logits + t * shape.experts;                      // [E]
    TokenSums sums = token_sums(score, fraction, shape.experts, lane);
    float mean_fraction = sums.fraction_weighted / sums.score_sum;
    float d_scale = d_loss[sequence] * alpha / static_cast<float>(shape.tokens_per_sequence) / sums.score_sum;
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) {
      float d_score = d_scale * (fraction[e] - mean_fraction);
      d_logit[e] += d_score * score[e] * (1.0f - score[e]);
    }
  }
}

}  // namespace

cudaError_t balance_loss_forward(float* loss, float* expert_fraction, const float* scores,
                                 const int32_t* topk_indices, const BalanceShape& shape, float alpha,
                                 cudaStream_t stream) {
  if (shape.sequences == 0) return cudaSuccess;
  size_t shared_bytes = static_cast<size_t>(shape.experts) * (sizeof(float) + sizeof(int));
  balance_forward_kernel<<<static_cast<unsigned int>(shape.sequences), kSequenceThreads, shared_bytes, stream>>>(
      loss, expert_fraction, scores, topk_indices, shape, alpha);
  return cudaGetLastError();
}

cudaError_t balance_loss_backward(float* d_logits, const float* d_loss, const float* expert_fraction,
                                  const float* scores, const BalanceShape& shape, float alpha, cudaStream_t stream) {
  int64_t tokens = shape.sequences * shape.tokens_per_sequence;
  if (tokens == 0) return cudaSuccess;
  constexpr int64_t kMaxBlocks = 8192;
  int64_t blocks = (tokens + kBackwardWarpsPerBlock - 1) / kBackwardWarpsPerBlock;
  balance_backward_kernel<<<static_cast<unsigned int>(blocks > kMaxBlocks ? kMaxBlocks : blocks),
                            kBackwardWarpsPerBlock * kWarpSize, 0, stream>>>(d_logits, d_loss, expert_fraction,
                                                                             scores, shape, alpha);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
