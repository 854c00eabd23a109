#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

// Every kernel gives a warp to a token (kWarps tokens a block). The warp takes the token's experts in passes of up
// to kExpertsPerPass, whose sorted rows and weights it keeps in registers, and in each pass walks the token's row in
// pieces of consecutive elements, lane l taking pieces l, 32 + l, ...: it loads the piece of every expert of the
// pass before using any, so each lane has all of them in flight at once.
// __launch_bounds__ caps the registers so that kResidentBlocks blocks fit on a multiprocessor (3 for
// unpermute_backward_kernel, whose loads take more): enough loads in flight to cover memory latency, without spills.
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kExpertsPerPass = 4;
constexpr int kResidentBlocks = 4;

unsigned int blocks_for_tokens(int64_t tokens) { return static_cast<unsigned int>((tokens + kWarps - 1) / kWarps); }

__device__ inline int64_t warp_token() { return static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarpSize; }
__device__ inline int lane() { return static_cast<int>(threadIdx.x % kWarpSize); }

// The experts of a pass that begins at the token's first-th: at most kExpertsPerPass.
__device__ inline int pass_size(int64_t first, int64_t experts_per_token) {
  return static_cast<int>(min(experts_per_token - first, static_cast<int64_t>(kExpertsPerPass)));
}

// values[e] = token_values[e] for the pass's count experts (positions or weights of a token, from the pass's first).
template <typename T>
__device__ inline void load_pass(T (&values)[kExpertsPerPass], const T* token_values, int count) {
#pragma unroll
  for (int e = 0; e < kExpertsPerPass; ++e) values[e] = e < count ? token_values[e] : T{};
}

__device__ inline float widened(float x) { return x; }
__device__ inline float widened(uint16_t bf16_bits) { return __bfloat162float(__ushort_as_bfloat16(bf16_bits)); }

// An fp32 value as an element: itself, or its bf16 bits rounded to nearest even.
__device__ inline void round_into(float& element, float value) { element = value; }
__device__ inline void round_into(uint16_t& element, float value) {
  element = __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// x_sorted[positions[t, k]] = x[t]: each pass reads the token's row once and writes it to the pass's sorted rows,
// in units of 16 bytes where rows and pointers allow, else 2 where the rows allow, else 1 (e4m3 rows of odd width).
template <typename Unit>
__global__ void __launch_bounds__(kThreads, kResidentBlocks)
    permute_kernel(Unit* __restrict__ x_sorted, const Unit* __restrict__ x, const int32_t* __restrict__ positions,
                   int64_t tokens, int64_t experts_per_token, int64_t units_per_row) {
  int64_t token = warp_token();
  if (token >= tokens) return;
  const Unit* token_row = x + token * units_per_row;                       // [units_per_row]
  const int32_t* token_positions = positions + token * experts_per_token;  // [K]
  for (int64_t first = 0; first < experts_per_token; first += kExpertsPerPass) {
    int count = pass_size(first, experts_per_token);
    int32_t rows[kExpertsPerPass];
    load_pass(rows, token_positions + first, count);
    for (int64_t i = lane(); i < units_per_row; i += kWarpSize) {
      Unit unit = token_row[i];
#pragma unroll
      for (int e = 0; e < kExpertsPerPass; ++e) {
        if (e < count) x_sorted[rows[e] * units_per_row + i] = unit;
      }
    }
  }
}

// out[token] = the token's row of addend (kAddend: the MoE layer's residual, loaded by the first pass beside its rows)
// or 0 (addend unused), plus the weighted sum of its experts' rows (kWeighted) or their plain sum
// (permute_tokens_backward: d_x from d_x_sorted, topk_weights unused), added in the order of its experts (a pass after
// the first resumes from the sums it reads back from out). Rows: float, or uint16_t holding bf16 bits (widened
// exactly), in pieces of N = 16 bytes' worth of Rows, or 1.
template <int N, typename Rows, bool kWeighted, bool kAddend>
__global__ void __launch_bounds__(kThreads, kResidentBlocks)
    unpermute_kernel(float* __restrict__ out, const Rows* __restrict__ y_sorted, const float* __restrict__ topk_weights,
                     const float* __restrict__ addend, const int32_t* __restrict__ positions, PermutationShape shape) {
  int64_t token = warp_token();
  if (token >= shape.tokens) return;
  const int32_t* token_positions = positions + token * shape.experts_per_token;  // [K]
  float* out_token = out + token * shape.width;                                  // [D]
  const float* addend_token = kAddend ? addend + token * shape.width : nullptr;  // [D], or null
  // NOTE: a token without experts still takes a pass, which writes its zeros (or its addend).
  for (int64_t first = 0; first == 0 || first < shape.experts_per_token; first += kExpertsPerPass) {
    int count = pass_size(first, shape.experts_per_token);
    int32_t rows[kExpertsPerPass];
    float weights[kExpertsPerPass];
    load_pass(rows, token_positions + first, count);
    if constexpr (kWeighted) load_pass(weights, topk_weights + token * shape.experts_per_token + first, count);
    for (int64_t d = N * lane(); d < shape.width; d += N * kWarpSize) {
      Vector<Rows, N> pieces[kExpertsPerPass];
#pragma unroll
      for (int e = 0; e < kExpertsPerPass; ++e) {
        if (e < count) pieces[e] = load_vector<N>(y_sorted + rows[e] * shape.width + d);
      }
      Vector<float, N> sums{};
      if (first > 0) {
        sums = load_vector<N>(out_token + d);
      } else if constexpr (kAddend) {
        sums = load_vector<N>(addend_token + d);
      }
#pragma unroll
      for (int e = 0; e < kExpertsPerPass; ++e) {
        if (e >= count) continue;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          float term = widened(pieces[e].values[i]);
          sums.values[i] = __fadd_rn(sums.values[i], kWeighted ? __fmul_rn(weights[e], term) : term);
        }
      }
      store_vector(out_token + d, sums);
    }
  }
}

// For each of a token's assignments (its k-th expert), reading the token's d_out row once a pass for both gradients:
// d_y_sorted[row] = weight * d_out[token] (Gradient: float, or uint16_t for bf16 bits, rounded once) and
// d_topk_weights[assignment] = dot(d_out[token], y_sorted[row]), each lane's products fused into its sum piece by
// piece, element by element, then the lanes' sums added in a warp's xor tree. Rows: float, or uint16_t holding bf16
// bits. Pieces of N = 16 bytes' worth of the narrower of Gradient and Rows, or 1.
template <int N, typename Gradient, typename Rows>
__global__ void __launch_bounds__(kThreads, kResidentBlocks - 1)
    unpermute_backward_kernel(Gradient* __restrict__ d_y_sorted, float* __restrict__ d_topk_weights,
                              const float* __restrict__ d_out, const Rows* __restrict__ y_sorted,
                              const float* __restrict__ topk_weights, const int32_t* __restrict__ positions,
                              PermutationShape shape) {
  int64_t token = warp_token();
  if (token >= shape.tokens) return;
  const int64_t first_assignment = token * shape.experts_per_token;
  const float* d_token = d_out + token * shape.width;  // [D]
  for (int64_t first = 0; first < shape.experts_per_token; first += kExpertsPerPass) {
    int count = pass_size(first, shape.experts_per_token);
    int32_t rows[kExpertsPerPass];
    float weights[kExpertsPerPass];
    load_pass(rows, positions + first_assignment + first, count);
    load_pass(weights, topk_weights + first_assignment + first, count);
    float dots[kExpertsPerPass] = {};
    for (int64_t d = N * lane(); d < shape.width; d += N * kWarpSize) {
      Vector<float, N> d_values = load_vector<N>(d_token + d);
      Vector<Rows, N> pieces[kExpertsPerPass];
#pragma unroll
      for (int e = 0; e < kExpertsPerPass; ++e) {
        if (e < count) pieces[e] = load_vector<N>(y_sorted + rows[e] * shape.width + d);
      }
#pragma unroll
      for (int e = 0; e < kExpertsPerPass; ++e) {
        if (e >= count) continue;
        Vector<Gradient, N> d_y;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          round_into(d_y.values[i], __fmul_rn(weights[e], d_values.values[i]));
          dots[e] = __fmaf_rn(d_values.values[i], widened(pieces[e].values[i]), dots[e]);
        }
        store_vector(d_y_sorted + rows[e] * shape.width + d, d_y);
      }
    }
#pragma unroll
    for (int e = 0; e < kExpertsPerPass; ++e) {
      if (e >= count) continue;
      float dot = warp_sum(dots[e]);
      if (lane() == 0) d_topk_weights[first_assignment + first + e] = dot;
    }
  }
}

bool aligned_to_16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

// Whether rows of `width` elements at these pointers split into pieces of `elements`, each 16-byte aligned.
template <typename... Pointers>
bool vector_rows(int64_t width, int elements, const Pointers*... rows) {
  return width % elements == 0 && (aligned_to_16(rows) && ...);
}

}  // namespace

cudaError_t permute_tokens(void* x_sorted, const void* x, int64_t element_bytes, const int32_t* positions,
                           const PermutationShape& shape, cudaStream_t stream) {
  int64_t row_bytes = shape.width * element_bytes;
  if (shape.tokens * shape.experts_per_token == 0 || row_bytes == 0) return cudaSuccess;
  unsigned int blocks = blocks_for_tokens(shape.tokens);
  if (vector_rows(row_bytes, 16, x_sorted, x)) {
    permute_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(x_sorted), static_cast<const uint4*>(x),
                                                    positions, shape.tokens, shape.experts_per_token, row_bytes / 16);
  } else if (row_bytes % 2 == 0) {
    permute_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint16_t*>(x_sorted), static_cast<const uint16_t*>(x),
                                                    positions, shape.tokens, shape.experts_per_token, row_bytes / 2);
  } else {
    permute_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint8_t*>(x_sorted), static_cast<const uint8_t*>(x),
                                                    positions, shape.tokens, shape.experts_per_token, row_bytes);
  }
  return cudaGetLastError();
}

cudaError_t permute_tokens_backward(float* d_x, const float* d_x_sorted, const int32_t* positions,
                                    const PermutationShape& shape, cudaStream_t stream) {
  if (shape.tokens * shape.width == 0) return cudaSuccess;
  unsigned int blocks = blocks_for_tokens(shape.tokens);
  if (vector_rows(shape.width, 4, d_x, d_x_sorted)) {
    unpermute_kernel<4, float, false, false>
        <<<blocks, kThreads, 0, stream>>>(d_x, d_x_sorted, nullptr, nullptr, positions, shape);
  } else {
    unpermute_kernel<1, float, false, false>
        <<<blocks, kThreads, 0, stream>>>(d_x, d_x_sorted, nullptr, nullptr, positions, shape);
  }
  return cudaGetLastError();
}

namespace {

// kAddend: addend is not null (the kernel without it never reads one).
template <bool kAddend, typename Rows>
cudaError_t launch_unpermute_tokens(float* out, const Rows* y_sorted, const float* topk_weights, const float* addend,
                                    const int32_t* positions, const PermutationShape& shape, cudaStream_t stream) {
  if (shape.tokens * shape.width == 0) return cudaSuccess;
  constexpr int kVector = 16 / sizeof(Rows);  // elements of a 16-byte piece of y_sorted
  unsigned int blocks = blocks_for_tokens(shape.tokens);
  if (vector_rows(shape.width, kVector, out, y_sorted, addend)) {
    unpermute_kernel<kVector, Rows, true, kAddend>
        <<<blocks, kThreads, 0, stream>>>(out, y_sorted, topk_weights, addend, positions, shape);
  } else {
    unpermute_kernel<1, Rows, true, kAddend>
        <<<blocks, kThreads, 0, stream>>>(out, y_sorted, topk_weights, addend, positions, shape);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t unpermute_tokens(float* out, const void* y_sorted, RowElement y_element, const float* topk_weights,
                             const float* addend, const int32_t* positions, const PermutationShape& shape,
                             cudaStream_t stream) {
  auto with_rows = [&](const auto* rows) {
    if (addend) return launch_unpermute_tokens<true>(out, rows, topk_weights, addend, positions, shape, stream);
    return launch_unpermute_tokens<false>(out, rows, topk_weights, addend, positions, shape, stream);
  };
  if (y_element == RowElement::bf16) return with_rows(static_cast<const uint16_t*>(y_sorted));
  return with_rows(static_cast<const float*>(y_sorted));
}

namespace {

template <typename Gradient, typename Rows>
cudaError_t launch_unpermute_tokens_backward(Gradient* d_y_sorted, float* d_topk_weights, const float* d_out,
                                             const Rows* y_sorted, const float* topk_weights,
                                             const int32_t* positions, const PermutationShape& shape,
                                             cudaStream_t stream) {
  if (shape.tokens * shape.experts_per_token == 0) return cudaSuccess;
  // Elements of a 16-byte piece of the narrower of d_y_sorted and y_sorted.
  constexpr int kVector = 16 / (sizeof(Gradient) < sizeof(Rows) ? sizeof(Gradient) : sizeof(Rows));
  unsigned int blocks = blocks_for_tokens(shape.tokens);
  if (vector_rows(shape.width, kVector, d_y_sorted, d_out, y_sorted)) {
    unpermute_backward_kernel<kVector><<<blocks, kThreads, 0, stream>>>(d_y_sorted, d_topk_weights, d_out, y_sorted,
                                                                       topk_weights, positions, shape);
  } else {
    unpermute_backward_kernel<1><<<blocks, kThreads, 0, stream>>>(d_y_sorted, d_topk_weights, d_out, y_sorted,
                                                                 topk_weights, positions, shape);
  }
  return cudaGetLastError();
}

template <typename Gradient>
cudaError_t unpermute_backward_with_gradient(Gradient* d_y_sorted, float* d_topk_weights, const float* d_out,
                                             const void* y_sorted, RowElement y_element, const float* topk_weights,
                                             const int32_t* positions, const PermutationShape& shape,
                                             cudaStream_t stream) {
  if (y_element == RowElement::bf16) {
    return launch_unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, static_cast<const uint16_t*>(y_sorted),
                                            topk_weights, positions, shape, stream);
  }
  return launch_unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, static_cast<const float*>(y_sorted),
                                          topk_weights, positions, shape, stream);
}

}  // namespace

cudaError_t unpermute_tokens_backward(void* d_y_sorted, RowElement d_y_element, float* d_topk_weights,
                                      const float* d_out, const void* y_sorted, RowElement y_element,
                                      const float* topk_weights, const int32_t* positions,
                                      const PermutationShape& shape, cudaStream_t stream) {
  if (d_y_element == RowElement::bf16) {
    return unpermute_backward_with_gradient(static_cast<uint16_t*>(d_y_sorted), d_topk_weights, d_out, y_sorted,
                                            y_element, topk_weights, positions, shape, stream);
  }
  return unpermute_backward_with_gradient(static_cast<float*>(d_y_sorted), d_topk_weights, d_out, y_sorted, y_element,
                                          topk_weights, positions, shape, stream);
}

}  // namespace hai::cuda::kernels

namespace hai::cuda::kernels {
// build_routing_plan's kernel (the token_permutation.h routing plan).
namespace routing_plan {

constexpr unsigned int kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int kPlanThreads = 1024;
constexpr int kItemsPerThread = 4;  // consecutive assignments per thread, so a tile keeps (t, k) order
constexpr int kTile = kPlanThreads * kItemsPerThread;

__device__ int warp_sum_int(int value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// The sum of `value` over the block; `scratch` holds 32 ints of shared memory.
__device__ int block_sum_int(int value, int* scratch) {
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_sum_int(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : 0;
  return warp_sum_int(value);
}

// The number of valid assignments whose expert is below `expert`: where the expert's block of rows starts.
__device__ int rows_before_expert(const int32_t* topk_indices, int64_t assignments, int expert, int* scratch) {
  int count = 0;
  for (int64_t a = threadIdx.x; a < assignments; a += blockDim.x) {
    int32_t other = topk_indices[a];
    count += other >= 0 && other < expert;
  }
  return block_sum_int(count, scratch);
}

// Block e places the assignments of expert e at rows offsets[e], offsets[e] + 1, ... in (t, k) order: a tile's
// matches are ranked by the prefix sum over threads, each thread holding kItemsPerThread consecutive assignments.
__global__ void routing_plan_kernel(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                                    const int32_t* topk_indices, int64_t assignments, int64_t experts) {
  __shared__ int scratch[32];
  __shared__ int warp_matches[32];
  int expert = blockIdx.x;
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  int next_row = rows_before_expert(topk_indices, assignments, expert, scratch);
  if (threadIdx.x == 0) expert_offsets[expert] = next_row;
  for (int64_t tile = 0; tile < assignments; tile += kTile) {
    int64_t first = tile + static_cast<int64_t>(threadIdx.x) * kItemsPerThread;
    int matches = 0;
    for (int i = 0; i < kItemsPerThread; ++i) matches += first + i < assignments && topk_indices[first + i] == expert;
    int inclusive = warp_inclusive_scan(matches, lane);
    if (lane == kWarpSize - 1) warp_matches[warp] = inclusive;
    __syncthreads();
    int row = next_row + inclusive - matches;
    for (int w = 0; w < warp; ++w) row += warp_matches[w];
    for (int w = 0; w < warps; ++w) next_row += warp_matches[w];
    for (int i = 0; i < kItemsPerThread; ++i) {
      if (first + i < assignments && topk_indices[first + i] == expert) {
        positions[first + i] = row;
        sources[row] = static_cast<int32_t>(first + i);
        ++row;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && expert == experts - 1) expert_offsets[experts] = next_row;
}

}  // namespace routing_plan

cudaError_t build_routing_plan(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                               const int32_t* topk_indices, int64_t assignments, int64_t experts,
                               cudaStream_t stream) {
  routing_plan::routing_plan_kernel<<<static_cast<unsigned int>(experts), routing_plan::kPlanThreads, 0, stream>>>(
      positions, sources, expert_offsets, topk_indices, assignments, experts);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
