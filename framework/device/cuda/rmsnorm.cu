#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

// The sum of squares of a row, added as rmsnorm_forward_kernel adds it (the rounding order of its rstd): its
// thread t = 32 w + v (warp w < 8, lane v) adds the squares of columns t + 256 j in turn (fused multiply-adds), then
// block_sum adds the threads' sums within each warp (xor butterfly: v offsets 16, 8, 4, 2, 1) and the 8 warps'
// sums (the 24 zero lanes change nothing: w offsets 4, 2, 1). Here lane l's columns 128 m + 4 l + k are that
// kernel's thread 128 (m % 2) + 4 l + k, so w = 4 (m % 2) + l / 8 and v = 4 (l % 8) + k: the v offsets 16, 8, 4
// are lane offsets 4, 2, 1, the v offsets 2, 1 stay within a float4, the w offset 4 within a lane, and the w
// offsets 2, 1 are lane offsets 16, 8. Zeros past the row add nothing.
template <int kVectors>
__device__ inline float block_order_sum_of_squares(const float4 (&values)[kVectors]) {
  float4 partial[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};  // [m % 2]: the sums of threads 128 (m % 2) + 4 lane + [0, 4)
#pragma unroll
  for (int m = 0; m < kVectors; ++m) {
    float4& p = partial[m % 2];
    p = float4{__fmaf_rn(values[m].x, values[m].x, p.x), __fmaf_rn(values[m].y, values[m].y, p.y),
               __fmaf_rn(values[m].z, values[m].z, p.z), __fmaf_rn(values[m].w, values[m].w, p.w)};
  }
  float warp_sums[2];  // of warps lane / 8 and 4 + lane / 8
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float4 p = partial[half];
    for (int offset = 4; offset > 0; offset /= 2) {
      p.x += __shfl_xor_sync(0xffffffffu, p.x, offset);
      p.y += __shfl_xor_sync(0xffffffffu, p.y, offset);
      p.z += __shfl_xor_sync(0xffffffffu, p.z, offset);
      p.w += __shfl_xor_sync(0xffffffffu, p.w, offset);
    }
    warp_sums[half] = (p.x + p.z) + (p.y + p.w);
  }
  float total = warp_sums[0] + warp_sums[1];
  total += __shfl_xor_sync(0xffffffffu, total, 16);
  return total + __shfl_xor_sync(0xffffffffu, total, 8);
}

// out, rstd <- the norm of x's row, one block per row (and out_bf16, unless null: out's values rounded). With an
// addend, the norm of sum = x + addend, whose row the block writes first (each thread reads back only the elements
// it wrote, so sum may be x or the addend).
template <typename Out>
__global__ void rmsnorm_forward_kernel(Out* out, __nv_bfloat16* out_bf16, float* rstd, const float* x,
                                       const float* addend, float* sum, const float* weight, float eps,
                                       int64_t width) {
  __shared__ float scratch[32];
  const float* row = x + blockIdx.x * width;  // [width]
  float sum_of_squares = 0.0f;
  if (addend) {
    const float* added = addend + blockIdx.x * width;  // [width]
    float* sum_row = sum + blockIdx.x * width;         // [width]
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
      // NOTE: __fadd_rn: one rounded add, never contracted, as add_scaled's y + 1 * x.
      float value = __fadd_rn(row[d], added[d]);
      sum_row[d] = value;
      sum_of_squares += value * value;
    }
    row = sum_row;
  } else {
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) sum_of_squares += row[d] * row[d];
  }
  sum_of_squares = block_sum(sum_of_squares, scratch);
  float mean_square = width > 0 ? sum_of_squares / static_cast<float>(width) : 0.0f;
  float r = rsqrtf(mean_square + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  Out* out_row = out + blockIdx.x * width;                                           // [width]
  __nv_bfloat16* rounded_row = out_bf16 ? out_bf16 + blockIdx.x * width : nullptr;  // [width], or none
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
    float normed = row[d] * r * weight[d];
    store(out_row + d, normed);
    if (rounded_row) store(rounded_row + d, normed);
  }
}

// Row `row` of a [rows, width] tensor as lane `lane` of its warp holds it: the float4s at columns 128 m + 4 lane,
// zeros past the row. All are loaded before any is used.
template <int kVectors>
__device__ inline void load_row(float4 (&values)[kVectors], const float* rows, int64_t row, int64_t width, int lane) {
#pragma unroll
  for (int m = 0; m < kVectors; ++m) {
    int64_t column = 128 * m + 4 * lane;
    values[m] = column < width ? *reinterpret_cast<const float4*>(rows + row * width + column) : float4{0, 0, 0, 0};
  }
}

// values (as load_row holds them) stored to row `row` of a [rows, width] tensor, each rounded once to Out.
template <typename Out, int kVectors>
__device__ inline void store_row(Out* rows, const float4 (&values)[kVectors], int64_t row, int64_t width, int lane) {
#pragma unroll
  for (int m = 0; m < kVectors; ++m) {
    int64_t column = 128 * m + 4 * lane;
    if (column >= width) continue;
    Vector<Out, 4> normed;
    store(&normed.values[0], values[m].x);
    store(&normed.values[1], values[m].y);
    store(&normed.values[2], values[m].z);
    store(&normed.values[3], values[m].w);
    store_vector(rows + row * width + column, normed);
  }
}

// The forward where the rows are float4s and at most 128 * kVectors wide: a warp per row (kThreads / 32 rows a
// block) holding the row as load_row does, so x (and the addend) is read once. Its rstd, out, out_bf16 and sum are
// rmsnorm_forward_kernel's bit for bit (block_order_sum_of_squares).
// NOTE: each row's loads all come before its stores (sum may be x or the addend, out may be anything), so that
// they are in flight together.
template <typename Out, int kVectors>
__global__ void __launch_bounds__(kThreads) rmsnorm_forward_warp_kernel(Out* out, __nv_bfloat16* out_bf16,
                                                                        float* rstd, const float* x,
                                                                        const float* addend, float* sum,
                                                                        const float* weight, float eps, int64_t rows,
                                                                        int64_t width) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  int lane = threadIdx.x % 32;
  float4 values[kVectors];  // x's row, or x + addend's
  load_row(values, x, row, width, lane);
  if (addend) {
    float4 added[kVectors];
    load_row(added, addend, row, width, lane);
#pragma unroll
    for (int m = 0; m < kVectors; ++m) {
      // NOTE: __fadd_rn: one rounded add, never contracted, as add_scaled's y + 1 * x.
      values[m] = float4{__fadd_rn(values[m].x, added[m].x), __fadd_rn(values[m].y, added[m].y),
                         __fadd_rn(values[m].z, added[m].z), __fadd_rn(values[m].w, added[m].w)};
    }
    store_row(sum, values, row, width, lane);
  }
  float sum_of_squares = block_order_sum_of_squares(values);
  float mean_square = width > 0 ? sum_of_squares / static_cast<float>(width) : 0.0f;
  float r = rsqrtf(mean_square + eps);
  if (lane == 0) rstd[row] = r;
  float4 weights[kVectors];
  load_row(weights, weight, 0, width, lane);
#pragma unroll
  for (int m = 0; m < kVectors; ++m) {
    values[m] = float4{values[m].x * r * weights[m].x, values[m].y * r * weights[m].y,
                       values[m].z * r * weights[m].z, values[m].w * r * weights[m].w};
  }
  store_row(out, values, row, width, lane);
  if (out_bf16) store_row(out_bf16, values, row, width, lane);
}

// d_x = rstd * (weight * d_out - x * rstd^2 * mean(weight * d_out * x)) (+ residual_grad), and d_x_bf16 unless
// null, one block per row.
__global__ void rmsnorm_input_grad_kernel(RmsnormBackwardArguments arguments) {
  __shared__ float scratch[32];
  int64_t width = arguments.width;
  const float* weight = arguments.weight;
  const float* row = arguments.x + blockIdx.x * width;        // [width]
  const float* d_row = arguments.d_out + blockIdx.x * width;  // [width]
  float projection = 0.0f;
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) projection += weight[d] * d_row[d] * row[d];
  projection = block_sum(projection, scratch);
  float r = arguments.rstd[blockIdx.x];
  float correction = r * r * projection / static_cast<float>(width);
  float* d_x_row = arguments.d_x + blockIdx.x * width;  // [width]
  const float* residual_row = arguments.residual_grad ? arguments.residual_grad + blockIdx.x * width : nullptr;
  auto* rounded = static_cast<__nv_bfloat16*>(arguments.d_x_bf16);
  __nv_bfloat16* rounded_row = rounded ? rounded + blockIdx.x * width : nullptr;  // [width], or none
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
    float gradient = r * (weight[d] * d_row[d] - row[d] * correction);
    // NOTE: __fadd_rn: the gradient rounded, then one rounded add, as add_scaled after a separate backward.
    float value = residual_row ? __fadd_rn(gradient, residual_row[d]) : gradient;
    d_x_row[d] = value;
    if (rounded_row) store(rounded_row + d, value);
  }
}

// d_weight[d] += sum_n d_out[n, d] * x[n, d] * rstd[n] in two passes, so that a [8192, 512] gradient still fills
// the GPU: a block owns kColumns columns of one chunk of kWeightGradChunkRows rows, its kRowLanes lanes of threads
// take every kRowLanes-th row, and the lanes' sums are added in a fixed order into partial [chunks, width]; then
// one thread per column adds the chunks' sums in order. Deterministic.
constexpr int kColumns = 32;
constexpr int kRowLanes = 8;

__global__ void rmsnorm_weight_grad_partial_kernel(float* partial, const float* d_out, const float* x,
                                                   const float* rstd, int64_t rows, int64_t width) {
  __shared__ float lane_sums[kRowLanes][kColumns + 1];
  int64_t d = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  int64_t first_row = static_cast<int64_t>(blockIdx.y) * kWeightGradChunkRows;
  int64_t end_row = min(rows, first_row + kWeightGradChunkRows);
  float sum = 0.0f;
  if (d < width) {
    for (int64_t n = first_row + threadIdx.y; n < end_row; n += kRowLanes) {
      sum += d_out[n * width + d] * x[n * width + d] * rstd[n];
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || d >= width) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  partial[blockIdx.y * width + d] = total;
}

// d_weight = the sum over the chunks of partial [chunks, width] (+ d_weight with beta 1): a block owns kColumns
// columns, its kRowLanes lanes take every kRowLanes-th chunk, and the lanes' sums are added in a fixed order
// (deterministic; hundreds of chunks would be a long serial chain for one thread per column).
__global__ void rmsnorm_weight_grad_sum_kernel(float* d_weight, const float* partial, int64_t chunks,
                                               int64_t width, float beta) {
  __shared__ float lane_sums[kRowLanes][kColumns + 1];
  int64_t d = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  float sum = 0.0f;
  if (d < width) {
    for (int64_t chunk = threadIdx.y; chunk < chunks; chunk += kRowLanes) sum += partial[chunk * width + d];
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || d >= width) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  d_weight[d] = beta == 0.0f ? total : d_weight[d] + total;
}

// d_x[at, at + 4) = rstd * (weight * d_out - x * correction) (+ residual_grad), and d_x_bf16 unless null,
// rmsnorm_input_grad_kernel's operations on 4 columns.
__device__ inline void store_input_grad(const RmsnormBackwardArguments& arguments, int64_t at, float4 weight,
                                        float4 d_out, float4 x, float r, float correction) {
  float4 gradient{r * (weight.x * d_out.x - x.x * correction), r * (weight.y * d_out.y - x.y * correction),
                  r * (weight.z * d_out.z - x.z * correction), r * (weight.w * d_out.w - x.w * correction)};
  if (arguments.residual_grad) {
    float4 residual = *reinterpret_cast<const float4*>(arguments.residual_grad + at);
    gradient = float4{__fadd_rn(gradient.x, residual.x), __fadd_rn(gradient.y, residual.y),
                      __fadd_rn(gradient.z, residual.z), __fadd_rn(gradient.w, residual.w)};
  }
  *reinterpret_cast<float4*>(arguments.d_x + at) = gradient;
  if (!arguments.d_x_bf16) return;
  Vector<__nv_bfloat16, 4> rounded;
  store(&rounded.values[0], gradient.x);
  store(&rounded.values[1], gradient.y);
  store(&rounded.values[2], gradient.z);
  store(&rounded.values[3], gradient.w);
  store_vector(static_cast<__nv_bfloat16*>(arguments.d_x_bf16) + at, rounded);
}

// sums += d_out * x * rstd, per column.
__device__ inline void add_weight_grad(float4& sums, float4 d_out, float4 x, float r) {
  sums.x += d_out.x * x.x * r;
  sums.y += d_out.y * x.y * r;
  sums.z += d_out.z * x.z * r;
  sums.w += d_out.w * x.w * r;
}

// The whole backward in one pass over the rows where the width is a multiple of 4 floats (16-byte rows): a block
// owns one chunk of kWeightGradChunkRows rows; per row it reads x and d_out once (float4s, thread t holding
// columns 4 (t + kThreads v) + [0, 4) for v < kVectors), writes d_x as rmsnorm_input_grad_kernel does, and adds
// d_out * x * rstd into per-column sums kept in registers, which go to the chunk's row of partial in the end (the
// rows in order: deterministic). rmsnorm_weight_grad_sum_kernel then adds the chunks in a fixed order.
template <int kVectors>
__global__ void __launch_bounds__(kThreads) rmsnorm_backward_chunk_kernel(RmsnormBackwardArguments arguments) {
  __shared__ float scratch[32];
  const int64_t width = arguments.width;
  const auto* weight = reinterpret_cast<const float4*>(arguments.weight);  // [width / 4]
  float4 weights[kVectors], weight_grad[kVectors];
  bool active[kVectors];
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    int64_t vector = threadIdx.x + static_cast<int64_t>(kThreads) * v;
    active[v] = vector * 4 < width;
    weights[v] = active[v] ? weight[vector] : float4{0.0f, 0.0f, 0.0f, 0.0f};
    weight_grad[v] = float4{0.0f, 0.0f, 0.0f, 0.0f};
  }
  int64_t first = static_cast<int64_t>(blockIdx.x) * kWeightGradChunkRows;
  int64_t end = min(arguments.rows, first + kWeightGradChunkRows);
  for (int64_t n = first; n < end; ++n) {
    const auto* row = reinterpret_cast<const float4*>(arguments.x + n * width);        // [width / 4]
    const auto* d_row = reinterpret_cast<const float4*>(arguments.d_out + n * width);  // [width / 4]
    float4 xs[kVectors], d_outs[kVectors];
    float projection = 0.0f;
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      int64_t vector = threadIdx.x + static_cast<int64_t>(kThreads) * v;
      xs[v] = active[v] ? row[vector] : float4{0.0f, 0.0f, 0.0f, 0.0f};
      d_outs[v] = active[v] ? d_row[vector] : float4{0.0f, 0.0f, 0.0f, 0.0f};
      projection += weights[v].x * d_outs[v].x * xs[v].x + weights[v].y * d_outs[v].y * xs[v].y +
                    weights[v].z * d_outs[v].z * xs[v].z + weights[v].w * d_outs[v].w * xs[v].w;
    }
    projection = block_sum(projection, scratch);
    float r = arguments.rstd[n];
    float correction = r * r * projection / static_cast<float>(width);
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      if (!active[v]) continue;
      int64_t column = 4 * (threadIdx.x + static_cast<int64_t>(kThreads) * v);
      store_input_grad(arguments, n * width + column, weights[v], d_outs[v], xs[v], r, correction);
      add_weight_grad(weight_grad[v], d_outs[v], xs[v], r);
    }
  }
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    int64_t vector = threadIdx.x + static_cast<int64_t>(kThreads) * v;
    if (active[v]) reinterpret_cast<float4*>(arguments.partial + blockIdx.x * width)[vector] = weight_grad[v];
  }
}

// The warp kernel's rows: float4s of 16-byte aligned tensors (4 bf16 of 8-byte aligned ones), at most
// kMaxRowVectors float4s a lane.
constexpr int kMaxRowVectors = 16;

template <typename Out>
bool rows_of_float4(const Out* out, const __nv_bfloat16* out_bf16, const float* x, const float* addend,
                    const float* sum, const float* weight, int64_t width) {
  auto aligned = [](const float* pointer) { return pointer == nullptr || vector_aligned<float, 4>(pointer); };
  bool rounded_aligned = out_bf16 == nullptr || vector_aligned<__nv_bfloat16, 4>(out_bf16);
  return width % 4 == 0 && width <= 128 * kMaxRowVectors && vector_aligned<Out, 4>(out) && rounded_aligned &&
         aligned(x) && aligned(addend) && aligned(sum) && aligned(weight);
}

// The forward over the rows: the warp kernel where the rows allow it, else the block kernel.
template <typename Out>
cudaError_t launch_forward(Out* out, __nv_bfloat16* out_bf16, float* rstd, const float* x, const float* addend,
                           float* sum, const float* weight, float eps, int64_t rows, int64_t width,
                           cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!rows_of_float4(out, out_bf16, x, addend, sum, weight, width)) {
    rmsnorm_forward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(out, out_bf16, rstd, x, addend,
                                                                                     sum, weight, eps, width);
    return cudaGetLastError();
  }
  int64_t vectors = (width + 127) / 128;
  auto kernel = vectors <= 1   ? rmsnorm_forward_warp_kernel<Out, 1>
                : vectors <= 2 ? rmsnorm_forward_warp_kernel<Out, 2>
                : vectors <= 4 ? rmsnorm_forward_warp_kernel<Out, 4>
                : vectors <= 8 ? rmsnorm_forward_warp_kernel<Out, 8>
                               : rmsnorm_forward_warp_kernel<Out, kMaxRowVectors>;
  constexpr int kRowsPerBlock = kThreads / 32;
  kernel<<<static_cast<unsigned int>((rows + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, stream>>>(
      out, out_bf16, rstd, x, addend, sum, weight, eps, rows, width);
  return cudaGetLastError();
}

// launch_forward for either output dtype.
cudaError_t launch_forward(void* out, bool bf16_out, void* out_bf16, float* rstd, const float* x, const float* addend,
                           float* sum, const float* weight, float eps, int64_t rows, int64_t width,
                           cudaStream_t stream) {
  auto* rounded = static_cast<__nv_bfloat16*>(out_bf16);
  if (bf16_out) {
    return launch_forward(static_cast<__nv_bfloat16*>(out), rounded, rstd, x, addend, sum, weight, eps, rows, width,
                          stream);
  }
  return launch_forward(static_cast<float*>(out), rounded, rstd, x, addend, sum, weight, eps, rows, width, stream);
}

}  // namespace

cudaError_t rmsnorm_forward(void* out, bool bf16_out, float* rstd, const float* x, const float* weight, float eps,
                            int64_t rows, int64_t width, cudaStream_t stream) {
  return launch_forward(out, bf16_out, nullptr, rstd, x, nullptr, nullptr, weight, eps, rows, width, stream);
}

cudaError_t add_rmsnorm_forward(float* sum, void* out, bool bf16_out, void* out_bf16, float* rstd, const float* a,
                                const float* b, const float* weight, float eps, int64_t rows, int64_t width,
                                cudaStream_t stream) {
  return launch_forward(out, bf16_out, out_bf16, rstd, a, b, sum, weight, eps, rows, width, stream);
}

namespace {

// The chunk kernel's float4 rows need 16-byte aligned tensors (d_x_bf16: 8-byte) and widths, and at most kMaxVectors
// float4s a thread.
constexpr int kMaxVectors = 8;

bool rows_of_float4(const RmsnormBackwardArguments& arguments) {
  auto aligned = [](const float* pointer) {
    return pointer == nullptr || reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
  };
  bool rounded_aligned = arguments.d_x_bf16 == nullptr || vector_aligned<__nv_bfloat16, 4>(arguments.d_x_bf16);
  return arguments.width % 4 == 0 && arguments.width <= 4 * kThreads * kMaxVectors && rounded_aligned &&
         aligned(arguments.d_x) &&
         aligned(arguments.partial) && aligned(arguments.residual_grad) && aligned(arguments.d_out) &&
         aligned(arguments.x) && aligned(arguments.weight);
}

template <int kVectors>
cudaError_t launch_chunk_kernel(const RmsnormBackwardArguments& arguments, int64_t chunks, cudaStream_t stream) {
  rmsnorm_backward_chunk_kernel<kVectors><<<static_cast<unsigned int>(chunks), kThreads, 0, stream>>>(arguments);
  return cudaGetLastError();
}

// d_x and the chunks' weight-gradient sums in partial: in one pass where the rows are float4s, else the row kernel
// and the column kernel.
cudaError_t launch_chunks(const RmsnormBackwardArguments& arguments, int64_t chunks, cudaStream_t stream) {
  if (rows_of_float4(arguments)) {
    int64_t vectors = (arguments.width / 4 + kThreads - 1) / kThreads;
    if (vectors <= 1) return launch_chunk_kernel<1>(arguments, chunks, stream);
    if (vectors <= 2) return launch_chunk_kernel<2>(arguments, chunks, stream);
    if (vectors <= 4) return launch_chunk_kernel<4>(arguments, chunks, stream);
    return launch_chunk_kernel<kMaxVectors>(arguments, chunks, stream);
  }
  rmsnorm_input_grad_kernel<<<static_cast<unsigned int>(arguments.rows), kThreads, 0, stream>>>(arguments);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  dim3 grid(static_cast<unsigned int>((arguments.width + kColumns - 1) / kColumns), static_cast<unsigned int>(chunks));
  rmsnorm_weight_grad_partial_kernel<<<grid, dim3(kColumns, kRowLanes), 0, stream>>>(
      arguments.partial, arguments.d_out, arguments.x, arguments.rstd, arguments.rows, arguments.width);
  return cudaGetLastError();
}

}  // namespace

int64_t rmsnorm_weight_grad_chunks(int64_t rows) { return (rows + kWeightGradChunkRows - 1) / kWeightGradChunkRows; }

cudaError_t rmsnorm_backward(const RmsnormBackwardArguments& arguments, cudaStream_t stream) {
  int64_t rows = arguments.rows, width = arguments.width;
  if (width == 0) return cudaSuccess;
  if (rows == 0) {
    // NOTE: no rows: d_weight is the empty sum (+ d_weight), so beta 0 still writes its zeros.
    if (arguments.weight_grad_beta != 0.0f) return cudaSuccess;
    return cudaMemsetAsync(arguments.d_weight, 0, width * sizeof(float), stream);
  }
  int64_t chunks = rmsnorm_weight_grad_chunks(rows);
  cudaError_t status = launch_chunks(arguments, chunks, stream);
  if (status != cudaSuccess) return status;
  auto column_blocks = static_cast<unsigned int>((width + kColumns - 1) / kColumns);
  rmsnorm_weight_grad_sum_kernel<<<column_blocks, dim3(kColumns, kRowLanes), 0, stream>>>(
      arguments.d_weight, arguments.partial, chunks, width, arguments.weight_grad_beta);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
