#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/rmsnorm_kernels.h"

namespace hai::cuda::kernels {
namespace {

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* x, const float* weight, float eps,
                                       int64_t width) {
  __shared__ float scratch[32];
  const float* row = x + blockIdx.x * width;  // [width]
  float sum_of_squares = 0.0f;
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) sum_of_squares += row[d] * row[d];
  sum_of_squares = block_sum(sum_of_squares, scratch);
  float mean_square = width > 0 ? sum_of_squares / static_cast<float>(width) : 0.0f;
  float r = rsqrtf(mean_square + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  float* out_row = out + blockIdx.x * width;  // [width]
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) out_row[d] = row[d] * r * weight[d];
}

// d_x = rstd * (weight * d_out - x * rstd^2 * mean(weight * d_out * x)), one block per row.
__global__ void rmsnorm_input_grad_kernel(float* d_x, const float* d_out, const float* x, const float* weight,
                                          const float* rstd, int64_t width) {
  __shared__ float scratch[32];
  const float* row = x + blockIdx.x * width;        // [width]
  const float* d_row = d_out + blockIdx.x * width;  // [width]
  float projection = 0.0f;
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) projection += weight[d] * d_row[d] * row[d];
  projection = block_sum(projection, scratch);
  float r = rstd[blockIdx.x];
  float correction = r * r * projection / static_cast<float>(width);
  float* d_x_row = d_x + blockIdx.x * width;  // [width]
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
    d_x_row[d] = r * (weight[d] * d_row[d] - row[d] * correction);
  }
}

// d_weight[d] += sum_n d_out[n, d] * x[n, d] * rstd[n]. A block owns kColumns columns; its kRowLanes lanes of
// threads take every kRowLanes-th row, then the lanes' partial sums are added in a fixed order.
constexpr int kColumns = 32;
constexpr int kRowLanes = 8;

__global__ void rmsnorm_weight_grad_kernel(float* d_weight, const float* d_out, const float* x, const float* rstd,
                                           int64_t rows, int64_t width) {
  __shared__ float partial[kRowLanes][kColumns + 1];
  int64_t d = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  float sum = 0.0f;
  if (d < width) {
    for (int64_t n = threadIdx.y; n < rows; n += kRowLanes) sum += d_out[n * width + d] * x[n * width + d] * rstd[n];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || d >= width) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += partial[lane][threadIdx.x];
  d_weight[d] += total;
}

}  // namespace

cudaError_t rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, float eps, int64_t rows,
                            int64_t width, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  rmsnorm_forward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(out, rstd, x, weight, eps, width);
  return cudaGetLastError();
}

cudaError_t rmsnorm_backward(float* d_x, float* d_weight, const float* d_out, const float* x, const float* weight,
                             const float* rstd, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows == 0 || width == 0) return cudaSuccess;
  rmsnorm_input_grad_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(d_x, d_out, x, weight, rstd,
                                                                                       width);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  auto column_blocks = static_cast<unsigned int>((width + kColumns - 1) / kColumns);
  rmsnorm_weight_grad_kernel<<<column_blocks, dim3(kColumns, kRowLanes), 0, stream>>>(d_weight, d_out, x, rstd, rows,
                                                                                       width);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
