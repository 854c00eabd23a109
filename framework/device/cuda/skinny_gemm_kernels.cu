#include <type_traits>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/skinny_gemm_kernels.h"

namespace hai::cuda::kernels {
namespace {

using sm80::commit_async_copies;
using sm80::copy_16_bytes_async;
using sm80::copy_4_bytes_async;
using sm80::wait_async_copies;

constexpr int kWarps = kThreads / 32;
constexpr int kStages = 4;  // slices in flight in the cp.async pipeline

// The kernels that stream a long depth (small N, small M) split each staged slice of it among kGroups groups of
// warps (group g: the kThreads / kGroups threads from g * kThreads / kGroups), whose sums of one element are added
// at the end.
template <int kGroups>
__device__ inline int depth_group() {
  return static_cast<int>(threadIdx.x) / (kThreads / kGroups);
}

__device__ inline float4 load_float4(const float* at) { return *reinterpret_cast<const float4*>(at); }
// NOTE: the kernels compute the column of a float4 store in 32-bit unsigned arithmetic (n < 2^31): from a 64-bit
// sum NVVM lost that it is a multiple of 4 and split some float4 stores into 4-byte ones.
__device__ inline void store_float4(float* at, float4 value) { *reinterpret_cast<float4*>(at) = value; }

// Component i of v (a constant once the loops are unrolled).
__device__ inline float component(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// sum + a . b, the four products added in turn.
__device__ inline float add_dot(float sum, float4 a, float4 b) {
  sum = fmaf(a.x, b.x, sum);
  sum = fmaf(a.y, b.y, sum);
  sum = fmaf(a.z, b.z, sum);
  return fmaf(a.w, b.w, sum);
}

// sum + a * b, elementwise.
__device__ inline float4 add_scaled(float4 sum, float a, float4 b) {
  return float4{fmaf(a, b.x, sum.x), fmaf(a, b.y, sum.y), fmaf(a, b.z, sum.z), fmaf(a, b.w, sum.w)};
}

// alpha * sum + beta * old, as the CPU GEMM forms it (old unused when beta == 0).
__device__ inline float scaled(float sum, float alpha, float beta, float old) {
  float value = alpha * sum;
  return beta == 0.0f ? value : value + beta * old;
}
__device__ inline float4 scaled(float4 sum, float alpha, float beta, float4 old) {
  return float4{scaled(sum.x, alpha, beta, old.x), scaled(sum.y, alpha, beta, old.y),
                scaled(sum.z, alpha, beta, old.z), scaled(sum.w, alpha, beta, old.w)};
}

// Runs a kStages-deep cp.async pipeline over `slices` slices of the depth: load(buffer, s) queues the copies of
// slice s into a buffer of `slice_floats` floats, multiply(buffer) uses a landed one. Returns once every copy has
// landed and every thread is done with the buffers.
template <typename Load, typename Multiply>
__device__ inline void run_pipeline(float* buffers, int slice_floats, int64_t slices, Load load, Multiply multiply) {
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < slices) load(buffers + s * slice_floats, s);
    commit_async_copies();
  }
  for (int64_t s = 0; s < slices; ++s) {
    wait_async_copies<kStages - 2>();
    __syncthreads();  // slice s has landed for every thread, and every thread is done with slice s - 1's buffer
    int64_t next = s + kStages - 1;
    if (next < slices) load(buffers + next % kStages * slice_floats, next);
    commit_async_copies();
    multiply(buffers + s % kStages * slice_floats);
  }
  wait_async_copies<0>();
  __syncthreads();
}

// Adds the kGroups depth groups' sums into group 0's as a pairwise tree: groups [h, 2 h) hand theirs to groups
// [0, h) through shared memory for h = kGroups / 2, ..., 2, 1 (4 groups: (g0 + g2) + (g1 + g3)). Threads
// kThreads / kGroups apart hold sums of the same elements.
// handoff: kGroups / 2 * kRows * kColumns * (kThreads / kGroups) floats of shared memory that no thread is using.
template <int kGroups, int kRows, int kColumns>
__device__ inline void sum_depth_groups(float (&sums)[kRows][kColumns], float* handoff) {
  constexpr int kGroupThreads = kThreads / kGroups;
  int group = depth_group<kGroups>();
  float* slot = handoff + threadIdx.x % kGroupThreads;
  auto at = [slot](int buffer, int i, int j) -> float& {
    return slot[((buffer * kRows + i) * kColumns + j) * kGroupThreads];
  };
#pragma unroll
  for (int half = kGroups / 2; half >= 1; half /= 2) {
    __syncthreads();  // the handoff is free
    if (group >= half && group < 2 * half) {
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
#pragma unroll
        for (int j = 0; j < kColumns; ++j) at(group - half, i, j) = sums[i][j];
      }
    }
    __syncthreads();
    if (group < half) {
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
#pragma unroll
        for (int j = 0; j < kColumns; ++j) sums[i][j] += at(group, i, j);
      }
    }
  }
}

// NOTE: shared memory returns a warp's 16-byte loads in 2 passes instead of 4 when lanes l and l ^ 1 (or l and l ^ 2)
// read the same addresses, so the small-N and small-M kernels give lanes l and l ^ 1 the same rows of a and lanes l
// and l ^ 2 the same columns of b: lane bit 0 picks among columns, bit 1 among rows.

// Small N: c [m, n] = alpha * a [m, k] @ b [n, k]^T + beta * c. A block takes kBlockRows rows of C and all its
// n <= kSmall columns (kSmall: n rounded up to 32 or 64); slices kSliceDepth deep of a's rows and of b's (zeros past
// m, n and k) stream through the pipeline, both in their own layout: depth-contiguous rows kPitch floats apart. Warp
// w takes columns [32 h, 32 h + 32) with h = w % (kSmall / 32), and in depth group g = w / (kSmall / 32) the slice's
// depths [kGroupDepth g, kGroupDepth (g + 1)), a float4 at a time; lane l the rows (l >> 1 & 7) + 8 i and the columns
// 32 h + ((l & 1) | (l >> 3 & 2)) + 4 j (i, j < 8). Element (row, column) sums the depths 64 s + kGroupDepth g + t
// (t < kGroupDepth) of each group g in turn, then adds the groups' sums as sum_depth_groups does.
namespace small_n {

constexpr int kBlockRows = 64;
constexpr int kSliceDepth = 64;
// NOTE: 4 floats of padding put consecutive rows 4 banks apart, so the 4 rows of a and the 2 columns of b that a
// quarter-warp reads as float4s at once hit distinct banks.
constexpr int kPitch = kSliceDepth + 4;
constexpr int kThreadRows = 8;
constexpr int kThreadColumns = 8;
static_assert(kBlockRows == 8 * kThreadRows, "8 row groups cover the block's rows");

template <int kSmall>
constexpr int kGroups = kWarps / (kSmall / 32);

// A slice: [kBlockRows + kSmall, kPitch], a's rows then b's.
template <int kSmall>
__host__ __device__ constexpr int slice_floats() {
  return (kBlockRows + kSmall) * kPitch;
}

template <int kSmall>
constexpr int shared_bytes() {
  int pipeline = kStages * slice_floats<kSmall>();
  int handoff = kGroups<kSmall> / 2 * kThreadRows * kThreadColumns * (kThreads / kGroups<kSmall>);
  return 4 * (pipeline > handoff ? pipeline : handoff);
}

// Queues the copies of depths [first_depth, first_depth + kSliceDepth) of a's rows [first_row, first_row +
// kBlockRows) and of b's rows [0, kSmall) into `slice`.
template <int kSmall>
__device__ inline void load_slice(float* slice, const SkinnyGemmArguments& g, int64_t first_row, int64_t first_depth) {
  constexpr int kRowChunks = kSliceDepth / 4;  // 16-byte copies per row
  constexpr int kChunks = (kBlockRows + kSmall) * kRowChunks;
  static_assert(kChunks % kThreads == 0, "whole rounds of copies");
#pragma unroll
  for (int q = 0; q < kChunks / kThreads; ++q) {
    int chunk = static_cast<int>(threadIdx.x) + q * kThreads;
    int row = chunk / kRowChunks, depth = chunk % kRowChunks * 4;
    int64_t k = first_depth + depth;
    bool in_a = row < kBlockRows;
    int64_t source_row = in_a ? first_row + row : row - kBlockRows;
    bool valid = k < g.k && source_row < (in_a ? g.m : g.n);
    const float* source = valid ? (in_a ? g.a : g.b) + source_row * g.k + k : g.a;
    copy_16_bytes_async(slice + row * kPitch + depth, source, valid);
  }
}

// sums += the slice's products over this thread's depth group.
template <int kSmall>
__device__ inline void multiply_slice(float (&sums)[kThreadRows][kThreadColumns], const float* slice, int row,
                                      int column) {
  constexpr int kGroupDepth = kSliceDepth / kGroups<kSmall>;
  int first_depth = depth_group<kGroups<kSmall>>() * kGroupDepth;
  const float* a_rows = slice + row * kPitch + first_depth;
  const float* b_rows = slice + (kBlockRows + column) * kPitch + first_depth;
#pragma unroll
  for (int d = 0; d < kGroupDepth; d += 4) {
    float4 a[kThreadRows];
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i) a[i] = load_float4(a_rows + 8 * i * kPitch + d);
#pragma unroll
    for (int j = 0; j < kThreadColumns; ++j) {
      float4 b = load_float4(b_rows + 4 * j * kPitch + d);
#pragma unroll
      for (int i = 0; i < kThreadRows; ++i) sums[i][j] = add_dot(sums[i][j], a[i], b);
    }
  }
}

template <int kSmall>
__global__ void __launch_bounds__(kThreads, 1) small_n_kernel(SkinnyGemmArguments g) {
  extern __shared__ float4 shared_memory[];
  float* buffers = reinterpret_cast<float*>(shared_memory);
  int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int row = lane >> 1 & 7;                                                        // + 8 i
  int column = 32 * (warp % (kSmall / 32)) + ((lane & 1) | (lane >> 3 & 2));  // + 4 j
  int64_t first_row = static_cast<int64_t>(blockIdx.x) * kBlockRows;
  float sums[kThreadRows][kThreadColumns] = {};
  run_pipeline(
      buffers, slice_floats<kSmall>(), (g.k + kSliceDepth - 1) / kSliceDepth,
      [&](float* slice, int64_t s) { load_slice<kSmall>(slice, g, first_row, s * kSliceDepth); },
      [&](const float* slice) { multiply_slice<kSmall>(sums, slice, row, column); });
  sum_depth_groups<kGroups<kSmall>>(sums, buffers);
  if (depth_group<kGroups<kSmall>>() != 0) return;
#pragma unroll
  for (int i = 0; i < kThreadRows; ++i) {
#pragma unroll
    for (int j = 0; j < kThreadColumns; ++j) {
      int64_t out_row = first_row + row + 8 * i, out_column = column + 4 * j;
      if (out_row >= g.m || out_column >= g.n) continue;
      float* out = g.c + out_row * g.n + out_column;
      *out = scaled(sums[i][j], g.alpha, g.beta, g.beta == 0.0f ? 0.0f : *out);
    }
  }
}

}  // namespace small_n

// Small K: c [m, n] = alpha * a [m, k] @ b [k, n] + beta * c. A block takes a kBlockRows x kBlockColumns tile of C,
// for which a's rows and b's columns are staged whole (k <= kSmall: k rounded up to 32 or 64; zeros past m, n and k):
// warp w takes rows 8 w + i (i < 8), lane l columns 4 l .. 4 l + 3. C's old values (beta != 0) are loaded first, in
// flight while the operands land and multiply. Each element sums k = 0, 1, ... in turn, as the CPU does.
namespace small_k {

constexpr int kBlockRows = 64;
constexpr int kBlockColumns = 128;
constexpr int kThreadRows = kBlockRows / kWarps;
static_assert(kBlockColumns == 4 * 32, "a float4 of columns a lane");

// Queues the copies of a's rows [first_row, first_row + kBlockRows) into a_tile [kBlockRows, kSmall] and of b's
// columns [first_column, first_column + kBlockColumns) into b_tile [kSmall, kBlockColumns].
template <int kSmall>
__device__ inline void load_tiles(float* a_tile, float* b_tile, const SkinnyGemmArguments& g, int64_t first_row,
                                  int64_t first_column) {
  static_assert(kBlockRows * kSmall % kThreads == 0 && kSmall * kBlockColumns / 4 % kThreads == 0, "whole rounds");
#pragma unroll
  for (int q = 0; q < kBlockRows * kSmall / kThreads; ++q) {
    int element = static_cast<int>(threadIdx.x) + q * kThreads;
    int64_t row = first_row + element / kSmall;
    int depth = element % kSmall;
    bool valid = row < g.m && depth < g.k;
    copy_4_bytes_async(a_tile + element, valid ? g.a + row * g.k + depth : g.a, valid);
  }
#pragma unroll
  for (int q = 0; q < kSmall * kBlockColumns / 4 / kThreads; ++q) {
    int chunk = static_cast<int>(threadIdx.x) + q * kThreads;
    int depth = chunk / (kBlockColumns / 4);
    int64_t column = first_column + chunk % (kBlockColumns / 4) * 4;
    bool valid = depth < g.k && column < g.n;
    copy_16_bytes_async(b_tile + 4 * chunk, valid ? g.b + depth * g.n + column : g.b, valid);
  }
  commit_async_copies();
}

template <int kSmall>
__global__ void __launch_bounds__(kThreads, 2) small_k_kernel(SkinnyGemmArguments g) {
  __shared__ float4 a_tile[kBlockRows * kSmall / 4];     // [kBlockRows, kSmall]
  __shared__ float4 b_tile[kSmall * kBlockColumns / 4];  // [kSmall, kBlockColumns]
  int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int64_t first_row = static_cast<int64_t>(blockIdx.x) * kBlockRows;
  int64_t first_column = static_cast<int64_t>(blockIdx.y) * kBlockColumns;
  int64_t row = first_row + kThreadRows * warp;  // the thread's first row
  int64_t column = blockIdx.y * kBlockColumns + 4 * (threadIdx.x % 32);  // in 32 bits (see store_float4)
  bool column_valid = column < g.n;
  float4 old[kThreadRows] = {};
  if (g.beta != 0.0f && column_valid) {
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i) {
      if (row + i < g.m) old[i] = load_float4(g.c + (row + i) * g.n + column);
    }
  }
  const float* a_rows = reinterpret_cast<const float*>(a_tile) + kThreadRows * warp * kSmall;
  const float* b_columns = reinterpret_cast<const float*>(b_tile) + 4 * lane;
  load_tiles<kSmall>(reinterpret_cast<float*>(a_tile), reinterpret_cast<float*>(b_tile), g, first_row, first_column);
  wait_async_copies<0>();
  __syncthreads();
  float4 sums[kThreadRows] = {};
#pragma unroll
  for (int d = 0; d < kSmall; d += 4) {
    float4 b[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) b[t] = load_float4(b_columns + (d + t) * kBlockColumns);
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i) {
      float4 a = load_float4(a_rows + i * kSmall + d);
#pragma unroll
      for (int t = 0; t < 4; ++t) sums[i] = add_scaled(sums[i], component(a, t), b[t]);
    }
  }
  if (!column_valid) return;
#pragma unroll
  for (int i = 0; i < kThreadRows; ++i) {
    if (row + i < g.m) store_float4(g.c + (row + i) * g.n + column, scaled(sums[i], g.alpha, g.beta, old[i]));
  }
}

}  // namespace small_k

// Small M: c [m, n] = alpha * a [k, m]^T @ b [k, n] + beta * c in two kernels. The first gives block (x, s) the
// columns [128 x, 128 x + 128) of C's m <= kSmall rows (kSmall: m rounded up to 32 or 64) over the depths of split
// s, whose slices kSliceDepth deep (a's rows, kSmall floats, then b's, 128; zeros past m, n and the split) stream
// through the pipeline. Warp w takes columns [64 h, 64 h + 64) with h = w % 2, and in depth group g = w / 2 the
// slice's depths [8 g, 8 g + 8), one at a time; lane l the rows 4 ((l >> 1 & 1) | (l >> 3 & 2)) + 16 q + r and the
// columns 64 h + 4 ((l & 1) | (l >> 1 & 6)) + 32 j + t (q < kSmall / 16; r, t < 4; j < 2). Each split's sums (the
// depths 32 s' + 8 g + t of its slices s' in turn for each group g, the groups added as sum_depth_groups does) go to
// its slice of the workspace; the second kernel adds the splits in order.
namespace small_m {

constexpr int kBlockColumns = 128;
constexpr int kSliceDepth = 32;
constexpr int kGroups = 4;
constexpr int kGroupDepth = kSliceDepth / kGroups;
constexpr int kThreadColumns = 8;
// A split sums about kSplitDepth depths, fewer splits of more when that would make more than kMaxSplits.
constexpr int64_t kSplitDepth = 512;
constexpr int64_t kMaxSplits = 32;

// A slice: a's rows [kSliceDepth, kSmall], then b's [kSliceDepth, kBlockColumns].
template <int kSmall>
__host__ __device__ constexpr int slice_floats() {
  return kSliceDepth * (kSmall + kBlockColumns);
}

template <int kSmall>
constexpr int shared_bytes() {
  int pipeline = kStages * slice_floats<kSmall>();
  int handoff = kGroups / 2 * (kSmall / 4) * kThreadColumns * (kThreads / kGroups);
  return 4 * (pipeline > handoff ? pipeline : handoff);
}

// Whole slices per split.
int64_t split_depth(int64_t k) {
  int64_t splits = (k + kSplitDepth - 1) / kSplitDepth;
  if (splits > kMaxSplits) splits = kMaxSplits;
  int64_t depth = (k + splits - 1) / splits;
  return (depth + kSliceDepth - 1) / kSliceDepth * kSliceDepth;
}

// Queues the copies of depths [first_depth, first_depth + kSliceDepth) (zeros from end_depth) of a's rows and of
// b's columns [first_column, first_column + kBlockColumns) into `slice`: thread t copies element t % kSmall of a's
// rows t / kSmall + kThreads / kSmall * q, and the float4 at 4 (t % 32) of b's rows t / 32 + 8 q.
template <int kSmall>
__device__ inline void load_slice(float* slice, const SkinnyGemmArguments& g, int64_t first_column,
                                  int64_t first_depth, int64_t end_depth) {
  constexpr int kRowStep = kThreads / kSmall;
  int a_column = static_cast<int>(threadIdx.x) % kSmall;
  int64_t a_depth = first_depth + static_cast<int>(threadIdx.x) / kSmall;
  const float* a_source = g.a + a_depth * g.m + a_column;
  float* a_rows = slice + threadIdx.x;  // [kSliceDepth, kSmall]
#pragma unroll
  for (int q = 0; q < kSliceDepth / kRowStep; ++q) {
    bool valid = a_depth + kRowStep * q < end_depth && a_column < g.m;
    copy_4_bytes_async(a_rows + kThreads * q, valid ? a_source + kRowStep * q * g.m : g.a, valid);
  }
  constexpr int kRowChunks = kBlockColumns / 4;  // 16-byte copies per row
  constexpr int kChunkRowStep = kThreads / kRowChunks;
  int64_t b_column = first_column + 4 * (threadIdx.x % kRowChunks);
  int64_t b_depth = first_depth + threadIdx.x / kRowChunks;
  const float* b_source = g.b + b_depth * g.n + b_column;
  float* b_rows = slice + kSliceDepth * kSmall + 4 * threadIdx.x;  // [kSliceDepth, kBlockColumns]
#pragma unroll
  for (int q = 0; q < kSliceDepth / kChunkRowStep; ++q) {
    bool valid = b_depth + kChunkRowStep * q < end_depth && b_column < g.n;
    copy_16_bytes_async(b_rows + 4 * kThreads * q, valid ? b_source + kChunkRowStep * q * g.n : g.b, valid);
  }
}

// sums += the slice's products over this thread's depth group.
template <int kSmall>
__device__ inline void multiply_slice(float (&sums)[kSmall / 4][kThreadColumns], const float* slice, int row,
                                      int column) {
  int first_depth = depth_group<kGroups>() * kGroupDepth;
  const float* a_rows = slice + first_depth * kSmall + row;
  const float* b_rows = slice + kSliceDepth * kSmall + first_depth * kBlockColumns + column;
#pragma unroll
  for (int d = 0; d < kGroupDepth; ++d) {
    float4 a[kSmall / 16], b[2];
#pragma unroll
    for (int q = 0; q < kSmall / 16; ++q) a[q] = load_float4(a_rows + d * kSmall + 16 * q);
#pragma unroll
    for (int j = 0; j < 2; ++j) b[j] = load_float4(b_rows + d * kBlockColumns + 32 * j);
#pragma unroll
    for (int q = 0; q < kSmall / 16; ++q) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            float& sum = sums[4 * q + r][4 * j + t];
            sum = fmaf(component(a[q], r), component(b[j], t), sum);
          }
        }
      }
    }
  }
}

template <int kSmall>
__global__ void __launch_bounds__(kThreads, kSmall == 32 ? 2 : 1)
    small_m_split_kernel(SkinnyGemmArguments g, float* workspace, int64_t depth_per_split) {
  extern __shared__ float4 shared_memory[];
  float* buffers = reinterpret_cast<float*>(shared_memory);
  int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int row = 4 * ((lane >> 1 & 1) | (lane >> 3 & 2));                 // + 16 q + r
  int column = 64 * (warp % 2) + 4 * ((lane & 1) | (lane >> 1 & 6));  // + 32 j + t
  int64_t first_column = static_cast<int64_t>(blockIdx.x) * kBlockColumns;
  int64_t first_depth = static_cast<int64_t>(blockIdx.y) * depth_per_split;
  int64_t end_depth = first_depth + depth_per_split < g.k ? first_depth + depth_per_split : g.k;
  float sums[kSmall / 4][kThreadColumns] = {};
  run_pipeline(
      buffers, slice_floats<kSmall>(), (end_depth - first_depth + kSliceDepth - 1) / kSliceDepth,
      [&](float* slice, int64_t s) {
        load_slice<kSmall>(slice, g, first_column, first_depth + s * kSliceDepth, end_depth);
      },
      [&](const float* slice) { multiply_slice<kSmall>(sums, slice, row, column); });
  sum_depth_groups<kGroups>(sums, buffers);
  if (depth_group<kGroups>() != 0) return;
  float* partial = workspace + static_cast<int64_t>(blockIdx.y) * g.m * g.n;  // [m, n]
#pragma unroll
  for (int q = 0; q < kSmall / 16; ++q) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int64_t out_row = row + 16 * q + r;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        int64_t out_column = blockIdx.x * kBlockColumns + column + 32 * j;  // in 32 bits (see store_float4)
        if (out_row >= g.m || out_column >= g.n) continue;
        const float* sum = sums[4 * q + r] + 4 * j;
        store_float4(partial + out_row * g.n + out_column, float4{sum[0], sum[1], sum[2], sum[3]});
      }
    }
  }
}

// c [m, n] = alpha * (the splits' slices of the workspace added in order) + beta * c, a float4 a thread.
__global__ void sum_splits_kernel(SkinnyGemmArguments g, const float* workspace, int64_t splits) {
  int64_t count = g.m * g.n;
  for (int64_t i = 4 * grid_index(); i < count; i += 4 * grid_stride()) {
    float4 sum = load_float4(workspace + i);
#pragma unroll 8
    for (int64_t s = 1; s < splits; ++s) {
      float4 partial = load_float4(workspace + s * count + i);
      sum = float4{sum.x + partial.x, sum.y + partial.y, sum.z + partial.z, sum.w + partial.w};
    }
    float4 old = g.beta == 0.0f ? float4{0, 0, 0, 0} : load_float4(g.c + i);
    store_float4(g.c + i, scaled(sum, g.alpha, g.beta, old));
  }
}

}  // namespace small_m

// launch(std::integral_constant<int, kSmall>): the small dimension rounded up to 32 or 64.
template <typename Launch>
cudaError_t with_small_width(int64_t small, Launch launch) {
  if (small <= 32) return launch(std::integral_constant<int, 32>{});
  return launch(std::integral_constant<int, 64>{});
}

unsigned int blocks(int64_t count, int64_t per_block) {
  return static_cast<unsigned int>((count + per_block - 1) / per_block);
}

template <typename Kernel>
cudaError_t allow_shared_bytes(Kernel kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

}  // namespace

cudaError_t skinny_gemm_small_n(const SkinnyGemmArguments& arguments, cudaStream_t stream) {
  return with_small_width(arguments.n, [&](auto width) {
    constexpr int kSmall = decltype(width)::value;
    constexpr int kBytes = small_n::shared_bytes<kSmall>();
    auto kernel = small_n::small_n_kernel<kSmall>;
    cudaError_t status = allow_shared_bytes(kernel, kBytes);
    if (status != cudaSuccess) return status;
    kernel<<<blocks(arguments.m, small_n::kBlockRows), kThreads, kBytes, stream>>>(arguments);
    return cudaGetLastError();
  });
}

cudaError_t skinny_gemm_small_k(const SkinnyGemmArguments& arguments, cudaStream_t stream) {
  return with_small_width(arguments.k, [&](auto width) {
    constexpr int kSmall = decltype(width)::value;
    dim3 grid(blocks(arguments.m, small_k::kBlockRows), blocks(arguments.n, small_k::kBlockColumns));
    small_k::small_k_kernel<kSmall><<<grid, kThreads, 0, stream>>>(arguments);
    return cudaGetLastError();
  });
}

int64_t skinny_gemm_small_m_splits(int64_t k) {
  int64_t depth = small_m::split_depth(k);
  return (k + depth - 1) / depth;
}

cudaError_t skinny_gemm_small_m(const SkinnyGemmArguments& arguments, float* workspace, cudaStream_t stream) {
  int64_t splits = skinny_gemm_small_m_splits(arguments.k);
  cudaError_t status = with_small_width(arguments.m, [&](auto width) {
    constexpr int kSmall = decltype(width)::value;
    constexpr int kBytes = small_m::shared_bytes<kSmall>();
    auto kernel = small_m::small_m_split_kernel<kSmall>;
    cudaError_t allowed = allow_shared_bytes(kernel, kBytes);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid(blocks(arguments.n, small_m::kBlockColumns), static_cast<unsigned int>(splits));
    kernel<<<grid, kThreads, kBytes, stream>>>(arguments, workspace, small_m::split_depth(arguments.k));
    return cudaGetLastError();
  });
  if (status != cudaSuccess) return status;
  small_m::sum_splits_kernel<<<grid_for(arguments.m * arguments.n / 4), kThreads, 0, stream>>>(arguments, workspace,
                                                                                             splits);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
