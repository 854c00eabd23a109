#pragma once
// Device-side helpers shared by the kernels: grid sizing for grid-stride loops and for blocks over rows of vectors,
// vector accesses (Vector), warp- and block-wide reductions and a warp prefix sum.
// Included only by .cu files (no hai headers: fmt's compile-time format checks do not build under nvcc).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels {

// An fp32 value written to an fp32 or a bf16 element (rounded to nearest even once).
__device__ inline void store(float* out, float value) { *out = value; }
__device__ inline void store(__nv_bfloat16* out, float value) { *out = __float2bfloat16_rn(value); }

inline constexpr int kThreads = 256;  // threads per block of every elementwise and row kernel

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, capped (the loop covers the rest).
inline unsigned int grid_for(int64_t n) {
  constexpr int64_t kMaxBlocks = 8192;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// A block of kThreads threads over rows of `row_vectors` vectors each: threadIdx.x takes a row's vectors (striding
// past blockDim.x), threadIdx.y picks the row; and the blocks for `rows` rows.
inline dim3 row_vector_block(int64_t row_vectors) {
  int x = static_cast<int>(row_vectors < 1 ? 1 : (row_vectors > kThreads ? kThreads : row_vectors));
  return dim3(x, kThreads / x);
}
inline unsigned int row_vector_blocks(int64_t rows, dim3 block) {
  return static_cast<unsigned int>((rows + block.y - 1) / block.y);
}

// The row of this thread in a row_vector_block.
__device__ inline int64_t block_row() { return static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; }

// N consecutive elements of T read or written as one access of up to 16 bytes (16-byte accesses beyond); the address
// must be aligned to alignof(Vector).
template <typename T, int N>
struct alignas(N * sizeof(T) < 16 ? N * sizeof(T) : 16) Vector {
  T values[N];
};

template <typename T, int N>
inline bool vector_aligned(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % alignof(Vector<T, N>) == 0;
}

template <int N, typename T>
__device__ inline Vector<T, N> load_vector(const T* at) {
  return *reinterpret_cast<const Vector<T, N>*>(at);
}

template <typename T, int N>
__device__ inline void store_vector(T* at, const Vector<T, N>& vector) {
  *reinterpret_cast<Vector<T, N>*>(at) = vector;
}

// Index of this thread in a grid-stride loop, and the stride.
__device__ inline int64_t grid_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The max / sum over the 4 lanes of a quad (lanes 4i .. 4i + 3: the lanes that share a row of an mma.sync or wgmma
// accumulator), returned to each of them.
__device__ inline float quad_max(float value) {
  value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 1));
  return fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 2));
}
__device__ inline float quad_sum(float value) {
  value += __shfl_xor_sync(0xffffffffu, value, 1);
  return value + __shfl_xor_sync(0xffffffffu, value, 2);
}

// Inclusive prefix sum of `value` over the warp's lanes (lane: the caller's lane index).
__device__ inline int warp_inclusive_scan(int value, int lane) {
  for (int offset = 1; offset < 32; offset *= 2) {
    int lower = __shfl_up_sync(0xffffffffu, value, offset);
    if (lane >= offset) value += lower;
  }
  return value;
}

__device__ inline float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// The sum of `value` over the block (blockDim.x a multiple of 32, at most 1024), returned to every thread.
// `scratch` holds 32 floats of shared memory; the call begins with __syncthreads, so consecutive calls may share it.
__device__ inline float block_sum(float value, float* scratch) {
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  int warps = blockDim.x / 32;
  value = warp_sum(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(value);
}

}  // namespace hai::cuda::kernels
