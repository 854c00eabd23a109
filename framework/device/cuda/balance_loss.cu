#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kWarpSize = 32;
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

// Expert counts of the sequence in shared memory, then f = E / (K * L) * count (exact, as on the CPU), also
// written to global_fraction unless it is null.
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
    if (global_fraction != nullptr) global_fraction[e] = fraction[e];
  }
  __syncthreads();
}

// Tokens of a sequence per block of balance_partials_kernel: the sequences' terms are summed by many blocks.
constexpr int kChunkTokens = 128;
constexpr int kChunkThreads = 256;

int64_t chunks_per_sequence(const BalanceShape& shape) {
  return (shape.tokens_per_sequence + kChunkTokens - 1) / kChunkTokens;
}

// Block (n, c): partials[n * chunks + c] = the sum over chunk c's tokens t of sequence n of sum_i f_i s[t, i] / Z_t,
// each warp summing its tokens (warp, warp + warps, ...) in that order, then the warps in a block tree; f from the
// sequence's counts (every block of the sequence counts them; chunk 0 writes them to expert_fraction).
__global__ void balance_partials_kernel(float* partials, float* expert_fraction, const float* scores,
                                        const int32_t* topk_indices, BalanceShape shape) {
  extern __shared__ float fraction[];  // [E], then E ints of counts
  __shared__ float scratch[32];
  int64_t sequence = blockIdx.x, chunk = blockIdx.y;
  int64_t first_token = sequence * shape.tokens_per_sequence;
  float* fraction_out = chunk == 0 ? expert_fraction + sequence * shape.experts : nullptr;
  expert_fraction_of_sequence(fraction, fraction_out, reinterpret_cast<int*>(fraction + shape.experts),
                              topk_indices + first_token * shape.experts_per_token, shape);
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  int64_t chunk_begin = chunk * kChunkTokens;
  int64_t chunk_end = min(chunk_begin + kChunkTokens, shape.tokens_per_sequence);
  // kTokenBatch tokens at a time, each lane's loads of the batch in flight together (token_sums' sums, term by term)
  constexpr int kTokenBatch = 8;
  float warp_total = 0.0f;
  for (int64_t first = chunk_begin + warp; first < chunk_end; first += kTokenBatch * warps) {
    float score_sum[kTokenBatch] = {}, fraction_weighted[kTokenBatch] = {};
    for (int64_t e = lane; e < shape.experts; e += kWarpSize) {
#pragma unroll
      for (int i = 0; i < kTokenBatch; ++i) {
        int64_t t = first + i * warps;
        float score = t < chunk_end ? scores[(first_token + t) * shape.experts + e] : 0.0f;
        score_sum[i] += score;
        fraction_weighted[i] += fraction[e] * score;
      }
    }
#pragma unroll
    for (int i = 0; i < kTokenBatch; ++i) {
      float sum = warp_sum(score_sum[i]), weighted = warp_sum(fraction_weighted[i]);
      if (first + i * warps < chunk_end) warp_total += weighted / sum;
    }
  }
  float total = block_sum(lane == 0 ? warp_total : 0.0f, scratch);
  if (threadIdx.x == 0) partials[sequence * gridDim.y + chunk] = total;
}

// One warp per sequence: loss[n] = alpha / L * the sum of its chunks' partials (lane-strided, then a warp tree).
__global__ void balance_total_kernel(float* loss, const float* partials, int64_t chunks, BalanceShape shape,
                                     float alpha) {
  int64_t sequence = blockIdx.x;
  float total = 0.0f;
  for (int64_t c = threadIdx.x; c < chunks; c += kWarpSize) total += partials[sequence * chunks + c];
  total = warp_sum(total);
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
  int64_t chunks = chunks_per_sequence(shape);
  float* partials = nullptr;  // [N, chunks]
  cudaError_t status =
      cudaMallocAsync(&partials, static_cast<size_t>(shape.sequences * chunks) * sizeof(float), stream);
  if (status != cudaSuccess) return status;
  size_t shared_bytes = static_cast<size_t>(shape.experts) * (sizeof(float) + sizeof(int));
  dim3 grid(static_cast<unsigned int>(shape.sequences), static_cast<unsigned int>(chunks));
  balance_partials_kernel<<<grid, kChunkThreads, shared_bytes, stream>>>(partials, expert_fraction, scores,
                                                                         topk_indices, shape);
  status = cudaGetLastError();
  if (status == cudaSuccess) {
    balance_total_kernel<<<static_cast<unsigned int>(shape.sequences), kWarpSize, 0, stream>>>(loss, partials, chunks,
                                                                                             shape, alpha);
    status = cudaGetLastError();
  }
  cudaError_t freed = cudaFreeAsync(partials, stream);
  return status != cudaSuccess ? status : freed;
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
